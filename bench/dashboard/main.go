// Command dashboard measures the server time of each page of pgq's dashboard on a
// database with a large history and backlog: -history finished attempts (-last-hour of
// them in the last hour, the rest spread over 14 days), -failed failed jobs, -waiting
// waiting jobs (ready, scheduled and retrying), -running reserved jobs and -unique
// unique locks, seeded with INSERT … SELECT generate_series and vacuumed, as
// autovacuum would. Each page is rendered by the handler itself (no network), -n times
// after -warmup, and the program prints the median, p90 and max per page as a Markdown
// table.
//
//	cd bench && go run ./dashboard [-n 25]
//
// DATABASE_URL names the server (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the program drops and
// recreates the database -db (bench_dashboard) on it, and keeps it with -keep.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/dashboard"
	"github.com/pgq-dev/pgq/pgq"
)

type options struct {
	adminURL                  string
	db                        string
	history, lastHour, failed int
	waiting, running, unique  int
	n, warmup                 int
	keep, skipSeed            bool
}

func main() {
	var o options
	o.adminURL = os.Getenv("DATABASE_URL")
	if o.adminURL == "" {
		o.adminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.db, "db", "bench_dashboard", "the database to create (dropped first)")
	flag.IntVar(&o.history, "history", 1_000_000, "finished attempts in pgq.attempts")
	flag.IntVar(&o.lastHour, "last-hour", 100_000, "of them, finished in the last hour")
	flag.IntVar(&o.failed, "failed", 10_000, "failed jobs (their attempts are part of -history)")
	flag.IntVar(&o.waiting, "waiting", 100_000, "waiting jobs: 90% ready, 5% scheduled, 5% retrying")
	flag.IntVar(&o.running, "running", 200, "reserved jobs")
	flag.IntVar(&o.unique, "unique", 10_000, "of the waiting jobs, holding a unique lock")
	flag.IntVar(&o.n, "n", 25, "timed requests per page")
	flag.IntVar(&o.warmup, "warmup", 3, "untimed requests per page first")
	flag.BoolVar(&o.keep, "keep", false, "keep the database")
	flag.BoolVar(&o.skipSeed, "reuse", false, "reuse the database a previous -keep run left")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dbURL, err := withDatabase(o.adminURL, o.db)
	if err != nil {
		return err
	}
	if !o.skipSeed {
		admin, err := pgx.Connect(ctx, o.adminURL)
		if err != nil {
			return err
		}
		for _, stmt := range []string{"DROP DATABASE IF EXISTS " + o.db + " WITH (FORCE)", "CREATE DATABASE " + o.db} {
			if _, err := admin.Exec(ctx, stmt); err != nil {
				admin.Close(ctx)
				return err
			}
		}
		admin.Close(ctx)
		if !o.keep {
			defer func() {
				if admin, err := pgx.Connect(context.Background(), o.adminURL); err == nil {
					_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.db+" WITH (FORCE)")
					admin.Close(context.Background())
				}
			}()
		}
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !o.skipSeed {
		if _, err := pgq.Migrate(ctx, pool); err != nil {
			return err
		}
		start := time.Now()
		if err := seed(ctx, pool, o); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		fmt.Fprintf(os.Stderr, "seeded in %s\n", time.Since(start).Round(time.Second))
	}
	var sizes string
	if err := pool.QueryRow(ctx, `SELECT format('pgq.attempts %s rows (%s), pgq.jobs %s rows (%s), pgq.failed_jobs %s rows, attempts in the last hour %s',
		(SELECT count(*) FROM pgq.attempts), pg_size_pretty(pg_total_relation_size('pgq.attempts')),
		(SELECT count(*) FROM pgq.jobs), pg_size_pretty((SELECT sum(bytes) FROM pgq.job_storage)),
		(SELECT count(*) FROM pgq.failed_jobs),
		(SELECT count(*) FROM pgq.attempts WHERE finished_at > now() - interval '1 hour'))`).Scan(&sizes); err != nil {
		return err
	}

	h, err := dashboard.Handler(pool, dashboard.Options{BasePath: "/pgq"})
	if err != nil {
		return err
	}
	pages, err := pagesToTime(ctx, pool, h)
	if err != nil {
		return err
	}
	var version string
	_ = pool.QueryRow(ctx, "SELECT version()").Scan(&version)
	fmt.Printf("Dashboard pages, server time (the handler called directly), %d requests each after %d warm-up\n\n", o.n, o.warmup)
	fmt.Printf("%s\n%s; Go %s, GOMAXPROCS %d\n\n", sizes, strings.SplitN(version, ",", 2)[0], runtime.Version(), runtime.GOMAXPROCS(0))
	fmt.Println("| page | median ms | p90 ms | max ms | bytes |")
	fmt.Println("|---|---:|---:|---:|---:|")
	failed := false
	for _, p := range pages {
		var times []time.Duration
		var size int
		for i := 0; i < o.warmup+o.n; i++ {
			serve := h
			if p.cold {
				if serve, err = dashboard.Handler(pool, dashboard.Options{BasePath: "/pgq"}); err != nil {
					return err
				}
			}
			start := time.Now()
			rec := httptest.NewRecorder()
			serve.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
			d := time.Since(start)
			if rec.Code != http.StatusOK {
				body, _ := io.ReadAll(rec.Body)
				return fmt.Errorf("%s: status %d: %.300s", p.path, rec.Code, body)
			}
			size = rec.Body.Len()
			if i >= o.warmup {
				times = append(times, d)
			}
		}
		slices.Sort(times)
		med, p90, worst := times[len(times)/2], times[len(times)*9/10], times[len(times)-1]
		fmt.Printf("| %s | %.1f | %.1f | %.1f | %d |\n", p.name, ms(med), ms(p90), ms(worst), size)
		failed = failed || (!p.cold && med > 100*time.Millisecond)
	}
	if failed {
		return fmt.Errorf("a page's median is over 100 ms")
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// page is a page to time; cold ones get a new handler for each request, so that it
// finds no counts kept from an earlier one (the overview's chart).
type page struct {
	name, path string
	cold       bool
}

// pagesToTime lists every page, with the deep ones found by following links: the 20th
// page of the ready list, a failed job and a live job.
func pagesToTime(ctx context.Context, pool *pgxpool.Pool, h http.Handler) ([]page, error) {
	var failedJob, liveJob, payloadValue string
	if err := pool.QueryRow(ctx, `SELECT uuid::text FROM pgq.failed_jobs ORDER BY id DESC LIMIT 1`).Scan(&failedJob); err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, `SELECT uuid::text, payload->>'n' FROM pgq.jobs WHERE reserved_at IS NULL ORDER BY id DESC LIMIT 1`).Scan(&liveJob, &payloadValue); err != nil {
		return nil, err
	}
	deep := "/pgq/jobs?state=ready"
	next := regexp.MustCompile(`<a href="(/pgq/jobs\?[^"]*)" id="next">`)
	for range 19 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, deep, nil))
		m := next.FindStringSubmatch(rec.Body.String())
		if m == nil {
			return nil, fmt.Errorf("no next page after %s", deep)
		}
		deep = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	return []page{
		{"overview `/`", "/pgq/", false},
		{"overview `/`, a process's first request (the chart counts the whole hour)", "/pgq/", true},
		{"ready, first page", "/pgq/jobs?state=ready", false},
		{"ready, 20th page (keyset)", deep, false},
		{"ready, queue q2 and job b", "/pgq/jobs?state=ready&queue=q2&job=b", false},
		{"ready, payload field n = a value (1 match)", "/pgq/jobs?state=ready&field=n&value=" + url.QueryEscape(payloadValue), false},
		{"ready, payload field n = no match", "/pgq/jobs?state=ready&field=n&value=none", false},
		{"scheduled", "/pgq/jobs?state=scheduled", false},
		{"retrying", "/pgq/jobs?state=retrying", false},
		{"running", "/pgq/jobs?state=running", false},
		{"failed", "/pgq/jobs?state=failed", false},
		{"failed, queue q3", "/pgq/jobs?state=failed&queue=q3", false},
		{"job page: a failed job", "/pgq/jobs/" + failedJob, false},
		{"job page: a waiting job", "/pgq/jobs/" + liveJob, false},
		{"locks & limits", "/pgq/locks", false},
		{"workers", "/pgq/workers", false},
		{"config check", "/pgq/check", false},
		{"history", "/pgq/history", false},
	}, nil
}

// seed fills the database with fast SQL. The history's ids follow finished_at, as the
// attempts of a real queue do.
func seed(ctx context.Context, pool *pgxpool.Pool, o options) error {
	older := o.history - o.lastHour
	steps := []string{
		`SELECT pgq.define_queue('q' || g) FROM generate_series(1, 4) g`,
		`SELECT pgq.define_limit('api', 100, '1 minute')`,
		`SELECT pgq.define_job(j, queue => 'q1', tries => 3, backoff => '{30}') FROM unnest('{a,b,c,d}'::text[]) j`,
		// The failed jobs, with their two attempts each in the history.
		fmt.Sprintf(`INSERT INTO pgq.failed_jobs (uuid, queue, payload, exception, failed_at, job, attempts, dispatched_at)
			SELECT gen_random_uuid(), 'q' || (1 + g %% 4), jsonb_build_object('n', g, 'customer', jsonb_build_object('id', g %% 1000)),
			       'VendorError: HTTP 500 from vendor (request ' || g || ')', now() - make_interval(secs => g * 30), (ARRAY['a','b','c','d'])[1 + g %% 4], 2,
			       now() - make_interval(secs => g * 30 + 90)
			FROM generate_series(1, %d) g`, o.failed),
		// History: the failed jobs' attempts first (two each), then finished jobs, older
		// to newer, the last -last-hour of them within the last hour.
		`INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, worker, reserved_at, started_at, finished_at, outcome, exception, delay, final)
			SELECT f.uuid, f.job, f.queue, a, 'w-' || (f.id % 8) || ':1', f.failed_at - interval '61 seconds', f.failed_at - interval '60 seconds',
			       CASE a WHEN 1 THEN f.failed_at - interval '30 seconds' ELSE f.failed_at END, 'failed', f.exception,
			       CASE a WHEN 1 THEN 30 END, a = 2
			FROM pgq.failed_jobs f, generate_series(1, 2) a
			ORDER BY f.failed_at, a`,
		fmt.Sprintf(`INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, worker, reserved_at, started_at, finished_at, outcome, exception)
			SELECT gen_random_uuid(), (ARRAY['a','b','c','d'])[1 + g %% 4], 'q' || (1 + g %% 4), 1, 'w-' || (g %% 8) || ':1',
			       t - interval '2 seconds', t - interval '1 second', t,
			       CASE WHEN g %% 100 < 95 THEN 'succeeded' WHEN g %% 100 < 98 THEN 'failed' WHEN g %% 100 < 99 THEN 'turned_away' ELSE 'released' END,
			       CASE WHEN g %% 100 BETWEEN 95 AND 97 THEN 'boom' END
			FROM generate_series(1, %d) g,
			     LATERAL (SELECT CASE WHEN g <= %d
			                          THEN now() - interval '14 days' + (interval '14 days' - interval '1 hour') * g / %d
			                          ELSE now() - interval '1 hour' + interval '1 hour' * (g - %d) / %d END AS t) x
			ORDER BY g`, o.history-2*o.failed, older-2*o.failed, max(older-2*o.failed, 1), older-2*o.failed, max(o.lastHour, 1)),
		// Waiting jobs, dispatched as an application would, in batches.
		fmt.Sprintf(`SELECT count(*) FROM generate_series(0, %d - 1, 10000) b,
			LATERAL pgq.dispatch_many((ARRAY['a','b','c','d'])[1 + (b / 10000) %% 4],
			    ARRAY(SELECT jsonb_build_object('n', b + g, 'customer', jsonb_build_object('id', (b + g) %% 1000)) FROM generate_series(1, least(10000, %d - b)) g),
			    queue => 'q' || (1 + (b / 10000) %% 4))`, o.waiting-o.unique, o.waiting-o.unique),
		fmt.Sprintf(`SELECT count(pgq.dispatch('u', jsonb_build_object('n', g), queue => 'q1', unique_key => 'u' || g, unique_for => '1 day'))
			FROM generate_series(1, %d) g`, o.unique),
		// 5% scheduled (a delay), 5% retrying (a backoff after an exception).
		`UPDATE pgq.jobs SET available_at = now() + interval '1 hour' WHERE id % 20 = 0`,
		`UPDATE pgq.jobs SET available_at = now() + interval '10 minutes', attempts = 1, wait_reason = 'backoff',
			last_exception = 'boom', last_exception_attempt = 1 WHERE id % 20 = 1`,
		fmt.Sprintf(`SELECT count(*) FROM pgq.reserve('busy-worker:1', '{q4}', %d)`, o.running),
		`VACUUM ANALYZE`,
	}
	for _, s := range steps {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.80s…: %w", strings.Join(strings.Fields(s), " "), err)
		}
	}
	return nil
}

func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}
