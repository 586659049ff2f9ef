// Command dashboard measures the server time of each page of pgq's dashboard on a
// database with a large history and backlog: -history finished attempts (-last-hour of
// them in the last hour, the rest spread over 14 days), -failed failed jobs, -waiting
// waiting jobs (ready, scheduled and retrying), -running reserved jobs and -unique
// unique locks; -batches batches of -batch-size members each (most finished, a tenth
// running, some of those stalled), one batch of -big-batch members still running, and
// -chains chains of three steps; seeded with INSERT … SELECT generate_series (the live
// members of batches and chains through pgq.dispatch_batch and pgq.dispatch_chain) and
// vacuumed, as autovacuum would. Each page is rendered by the handler itself (no network), -n times
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
	batches, batchSize        int
	bigBatch, chains          int
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
	flag.IntVar(&o.batches, "batches", 1000, "batches: 70% succeeded, 10% with failed members, 10% cancelled, 10% running (a tenth of those stalled)")
	flag.IntVar(&o.batchSize, "batch-size", 1000, "members of each of those batches")
	flag.IntVar(&o.bigBatch, "big-batch", 10_000, "members of one more batch, running: 40% succeeded, 1% failed, the rest waiting")
	flag.IntVar(&o.chains, "chains", 10_000, "chains of three steps: 60% succeeded, 20% failed at step 2, 20% running")
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
	if err := pool.QueryRow(ctx, `SELECT format('pgq.attempts %s rows (%s), pgq.jobs %s rows (%s), pgq.failed_jobs %s rows, attempts in the last hour %s; '
		    || '%s batches, pgq.job_ends %s rows, %s chains',
		(SELECT count(*) FROM pgq.attempts), pg_size_pretty(pg_total_relation_size('pgq.attempts')),
		(SELECT count(*) FROM pgq.jobs), pg_size_pretty((SELECT sum(bytes) FROM pgq.job_storage)),
		(SELECT count(*) FROM pgq.failed_jobs),
		(SELECT count(*) FROM pgq.attempts WHERE finished_at > now() - interval '1 hour'),
		(SELECT count(*) FROM pgq.job_batches), (SELECT count(*) FROM pgq.job_ends), (SELECT count(*) FROM pgq.job_chains))`).Scan(&sizes); err != nil {
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
	if err := pool.QueryRow(ctx, `SELECT uuid::text, payload->>'n' FROM pgq.jobs WHERE reserved_at IS NULL AND payload ? 'n' ORDER BY id DESC LIMIT 1`).Scan(&liveJob, &payloadValue); err != nil {
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
	var big, finished, chain, member string
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT id::text FROM pgq.job_batches WHERE name = 'big'),
		(SELECT id::text FROM pgq.job_batches WHERE finished_at IS NOT NULL ORDER BY created_at DESC LIMIT 1),
		(SELECT id::text FROM pgq.job_chains WHERE state = 'failed' ORDER BY created_at DESC LIMIT 1),
		(SELECT job_uuid::text FROM pgq.job_ends WHERE batch_id IS NOT NULL ORDER BY id DESC LIMIT 1)`).Scan(&big, &finished, &chain, &member); err != nil {
		return nil, err
	}
	follow := func(path string, pages int, link *regexp.Regexp) (string, error) {
		for range pages - 1 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			m := link.FindStringSubmatch(rec.Body.String())
			if m == nil {
				return "", fmt.Errorf("no next page after %s", path)
			}
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		return path, nil
	}
	deepBatches, err := follow("/pgq/batches", 10, regexp.MustCompile(`<a href="(/pgq/batches\?[^"]*)" id="next">`))
	if err != nil {
		return nil, err
	}
	deepMembers, err := follow("/pgq/batches/"+big+"?state=succeeded", 20, regexp.MustCompile(`<a href="(/pgq/batches/[^"]*)" id="next">`))
	if err != nil {
		return nil, err
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
		{"batches, all", "/pgq/batches", false},
		{"batches, 10th page (keyset)", deepBatches, false},
		{"batches, running", "/pgq/batches?state=running", false},
		{"batches, failed", "/pgq/batches?state=failed", false},
		{"batch page: 10,000 members (failed first)", "/pgq/batches/" + big, false},
		{"batch page: 10,000 members, ready", "/pgq/batches/" + big + "?state=ready", false},
		{"batch page: 10,000 members, succeeded, 20th page", deepMembers, false},
		{"batch page: a finished batch of 1,000", "/pgq/batches/" + finished, false},
		{"chains, all", "/pgq/chains", false},
		{"chains, failed", "/pgq/chains?state=failed", false},
		{"chain page: failed at step 2", "/pgq/chains/" + chain, false},
		{"job page: a batch member that succeeded", "/pgq/jobs/" + member, false},
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
	}
	steps = append(steps, workflowSeed(o)...)
	steps = append(steps, `VACUUM ANALYZE`)
	for _, s := range steps {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.80s…: %w", strings.Join(strings.Fields(s), " "), err)
		}
	}
	return nil
}

// workflowSeed are the statements that seed batches and chains. Finished members are
// written as pgq would have left them: an end in pgq.job_ends and an attempt in
// pgq.attempts each, the batch's counters in shard 0 (the pages sum the shards); live
// members are dispatched with pgq.dispatch_batch and pgq.dispatch_chain, and the
// finished members of running batches added to their rows.
func workflowSeed(o options) []string {
	n, size := o.batches, o.batchSize
	// kinds: 0-6 succeeded, 7 failed (1% of members), 8 cancelled (half), 9 running (half done)
	return []string{
		fmt.Sprintf(`INSERT INTO pgq.job_batches (id, name, total_jobs, options, cancelled_at, created_at, finished_at, then_at, catch_at, finally_at)
			SELECT (pgq._uuid7s(1))[1], 'batch ' || g, CASE WHEN g %% 10 = 9 THEN 0 ELSE %[2]d END,
			       '{"then_job": "report", "catch_job": "alert", "finally_job": "cleanup", "allow_failures": true, "queue": "q2"}',
			       CASE WHEN g %% 10 = 8 THEN now() - make_interval(mins => g) END,
			       now() - make_interval(mins => g + 30),
			       CASE WHEN g %% 10 <> 9 THEN now() - make_interval(mins => g) END,
			       CASE WHEN g %% 10 < 7 THEN now() - make_interval(mins => g) END,
			       CASE WHEN g %% 10 = 7 THEN now() - make_interval(mins => g + 10) END,
			       CASE WHEN g %% 10 <> 9 THEN now() - make_interval(mins => g) END
			FROM generate_series(1, %[1]d) g ORDER BY g DESC`, n, size),
		`INSERT INTO pgq.batch_counts (batch_id, shard) SELECT b.id, s FROM pgq.job_batches b, generate_series(0, 15) s`,
		// The finished members of every batch (a running one gets its live half below),
		// written as ended already: the trigger that would count them is off meanwhile.
		`ALTER TABLE pgq.job_ends DISABLE TRIGGER job_ends_advance`,
		fmt.Sprintf(`INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, ended_at)
			SELECT gen_random_uuid(),
			       CASE WHEN k = 7 AND m %% 100 = 0 THEN 'failed' WHEN k = 8 AND m > %[1]d / 2 THEN 'cancelled' ELSE 'succeeded' END,
			       CASE WHEN k = 7 AND m %% 100 = 0 THEN 'RowInvalid: no SKU' WHEN k = 8 AND m > %[1]d / 2 THEN 'cancelled with its batch' END,
			       b.id, b.created_at + make_interval(secs => m)
			FROM (SELECT id, created_at, (substring(name FROM 7)::int %% 10) AS k FROM pgq.job_batches) b,
			     generate_series(1, %[1]d) m
			WHERE b.k <> 9 OR m <= %[1]d / 2
			ORDER BY b.created_at, m`, size),
		`INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, worker, reserved_at, started_at, finished_at, outcome, exception, final)
			SELECT e.job_uuid, 'import_row', 'q2', 1, 'w-1:1', e.ended_at - interval '2 seconds', e.ended_at - interval '1 second', e.ended_at,
			       e.outcome, e.exception, e.outcome = 'failed'
			FROM pgq.job_ends e ORDER BY e.id`,
		`INSERT INTO pgq.failed_jobs (uuid, queue, payload, exception, failed_at, job, attempts, dispatched_at, batch_id)
			SELECT e.job_uuid, 'q2', '{"row": 1}', e.exception, e.ended_at, 'import_row', 1, e.ended_at - interval '1 minute', e.batch_id
			FROM pgq.job_ends e WHERE e.outcome = 'failed'`,
		`UPDATE pgq.batch_counts c SET failed = x.failed, cancelled = x.cancelled
			FROM (SELECT batch_id, count(*) FILTER (WHERE outcome = 'failed') AS failed, count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled
			      FROM pgq.job_ends GROUP BY batch_id) x
			WHERE c.batch_id = x.batch_id AND c.shard = 0`,
		`UPDATE pgq.job_batches b SET failed_job_ids = x.ids
			FROM (SELECT batch_id, array_agg(job_uuid) AS ids FROM pgq.job_ends WHERE outcome = 'failed' GROUP BY batch_id) x
			WHERE b.id = x.batch_id`,
		`INSERT INTO pgq.callbacks (batch_id, kind, job, job_uuid, queued_at, outcome, ended_at)
			SELECT b.id, k.kind, k.job, gen_random_uuid(), t, 'succeeded', t + interval '1 second'
			FROM pgq.job_batches b
			CROSS JOIN LATERAL (VALUES ('then', 'report', b.then_at), ('catch', 'alert', b.catch_at), ('finally', 'cleanup', b.finally_at)) k(kind, job, t)
			WHERE k.t IS NOT NULL`,
		`ALTER TABLE pgq.job_ends ENABLE ALWAYS TRIGGER job_ends_advance`,
		// the running batches' other half, waiting: a tenth of those batches stalled (ready
		// for an hour, nothing ended since), the others' due in an hour (their worker is away
		// for a while, say), so that they do not stall while the pages are timed
		fmt.Sprintf(`SELECT count(pgq.add_to_batch(b.id, (SELECT jsonb_agg(jsonb_build_object('job', 'import_row', 'payload', jsonb_build_object('row', m)))
			                                              FROM generate_series(1, %[1]d - %[1]d / 2) m)))
			FROM pgq.job_batches b WHERE b.finished_at IS NULL`, size),
		`UPDATE pgq.job_batches b SET total_jobs = b.total_jobs + x.n
			FROM (SELECT batch_id, count(*) AS n FROM pgq.job_ends GROUP BY batch_id) x
			WHERE b.id = x.batch_id AND b.finished_at IS NULL`,
		`UPDATE pgq.jobs j SET available_at = CASE WHEN substring(b.name FROM 7)::int % 100 = 99 THEN now() - interval '1 hour'
			                                          ELSE now() + interval '1 hour' END
			FROM pgq.job_batches b WHERE j.batch_id = b.id AND b.finished_at IS NULL`,
		`UPDATE pgq.job_ends e SET ended_at = now() - interval '2 hours'
			FROM pgq.job_batches b WHERE e.batch_id = b.id AND b.finished_at IS NULL AND substring(b.name FROM 7)::int % 100 = 99`,
		// the big batch: 40% succeeded, 1% failed, the rest waiting, some running
		fmt.Sprintf(`SELECT pgq.dispatch_batch((SELECT jsonb_agg(jsonb_build_object('job', 'import_row', 'payload', jsonb_build_object('row', m)))
			                                    FROM generate_series(1, %[1]d - %[1]d * 41 / 100) m),
			                                   name => 'big', then_job => 'report', catch_job => 'alert', allow_failures => true, queue => 'q3')`, o.bigBatch),
		`ALTER TABLE pgq.job_ends DISABLE TRIGGER job_ends_advance`,
		fmt.Sprintf(`INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, ended_at)
			SELECT gen_random_uuid(), CASE WHEN m %% 41 = 0 THEN 'failed' ELSE 'succeeded' END,
			       CASE WHEN m %% 41 = 0 THEN 'RowInvalid: no SKU in row ' || m END, b.id, now() - make_interval(secs => %[1]d - m)
			FROM pgq.job_batches b, generate_series(1, %[1]d * 41 / 100) m WHERE b.name = 'big' ORDER BY m`, o.bigBatch),
		`ALTER TABLE pgq.job_ends ENABLE ALWAYS TRIGGER job_ends_advance`,
		`INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, worker, reserved_at, started_at, finished_at, outcome, exception, final)
			SELECT e.job_uuid, 'import_row', 'q3', 1, 'w-2:1', e.ended_at - interval '2 seconds', e.ended_at - interval '1 second', e.ended_at,
			       e.outcome, e.exception, e.outcome = 'failed'
			FROM pgq.job_ends e JOIN pgq.job_batches b ON b.id = e.batch_id WHERE b.name = 'big' ORDER BY e.id`,
		`INSERT INTO pgq.failed_jobs (uuid, queue, payload, exception, failed_at, job, attempts, dispatched_at, batch_id)
			SELECT e.job_uuid, 'q3', '{"row": 1}', e.exception, e.ended_at, 'import_row', 1, e.ended_at - interval '1 minute', e.batch_id
			FROM pgq.job_ends e JOIN pgq.job_batches b ON b.id = e.batch_id WHERE b.name = 'big' AND e.outcome = 'failed'`,
		`UPDATE pgq.batch_counts c SET failed = c.failed + x.failed
			FROM (SELECT e.batch_id, count(*) AS failed FROM pgq.job_ends e JOIN pgq.job_batches b ON b.id = e.batch_id
			      WHERE b.name = 'big' AND e.outcome = 'failed' GROUP BY 1) x
			WHERE c.batch_id = x.batch_id AND c.shard = 0`,
		`UPDATE pgq.job_batches b SET total_jobs = b.total_jobs + (SELECT count(*) FROM pgq.job_ends e WHERE e.batch_id = b.id),
			catch_at = now() WHERE b.name = 'big'`,
		`SELECT count(*) FROM pgq.reserve('batch-worker:1', '{q3}', 20)`,
		// chains: 60% succeeded, 20% failed at step 2 (with their on_failure run), 20% running
		// at step 1 (its job due tomorrow)
		fmt.Sprintf(`INSERT INTO pgq.job_chains (id, steps, on_failure, queue, step, job_uuids, state, exception, created_at, finished_at)
			SELECT (pgq._uuid7s(1))[1], '[{"job": "fetch"}, {"job": "charge"}, {"job": "ship"}]', 'refund', 'q4',
			       CASE WHEN g %% 5 < 3 THEN 3 ELSE 2 END,
			       CASE WHEN g %% 5 < 3 THEN ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid()] ELSE ARRAY[gen_random_uuid(), gen_random_uuid()] END,
			       CASE WHEN g %% 5 < 3 THEN 'succeeded' ELSE 'failed' END,
			       CASE WHEN g %% 5 >= 3 THEN 'CardDeclined: do_not_honor' END,
			       now() - make_interval(secs => g * 10), now() - make_interval(secs => g * 10 - 5)
			FROM generate_series(1, %d * 4 / 5) g ORDER BY g DESC`, o.chains),
		`ALTER TABLE pgq.job_ends DISABLE TRIGGER job_ends_advance`,
		`INSERT INTO pgq.job_ends (job_uuid, outcome, exception, chain_id, chain_step, ended_at)
			SELECT c.job_uuids[s], CASE WHEN s = c.step AND c.state = 'failed' THEN 'failed' ELSE 'succeeded' END,
			       CASE WHEN s = c.step AND c.state = 'failed' THEN c.exception END, c.id, s, c.created_at + make_interval(secs => s)
			FROM pgq.job_chains c, generate_series(1, 3) s WHERE s <= c.step ORDER BY c.created_at, s`,
		`ALTER TABLE pgq.job_ends ENABLE ALWAYS TRIGGER job_ends_advance`,
		`INSERT INTO pgq.callbacks (chain_id, kind, job, job_uuid, queued_at, outcome, ended_at)
			SELECT c.id, 'on_failure', 'refund', gen_random_uuid(), c.finished_at, 'succeeded', c.finished_at + interval '1 second'
			FROM pgq.job_chains c WHERE c.state = 'failed'`,
		fmt.Sprintf(`SELECT count(pgq.dispatch_chain('[{"job": "fetch", "delay": 86400}, {"job": "charge"}, {"job": "ship"}]', 'refund', 'q4'))
			FROM generate_series(1, %d - %d * 4 / 5)`, o.chains, o.chains),
	}
}

func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}
