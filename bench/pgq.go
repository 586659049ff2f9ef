package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// pgqEnv is pgq's database: a pool for dispatching and checking, and the client.
type pgqEnv struct {
	cfg    *pgxpool.Config
	pool   *pgxpool.Pool
	client *pgq.Client
}

func setupPgq(ctx context.Context, o options) (*pgqEnv, error) {
	cfg, err := createDatabase(ctx, o, o.dbName)
	if err != nil {
		return nil, err
	}
	if o.pgqLoadMin >= 0 {
		// Bulk dispatches of this many jobs or more are kept as loads (S85), in every
		// session: the dispatching pool's and the workers'.
		cfg.ConnConfig.RuntimeParams["pgq.load_min"] = fmt.Sprint(o.pgqLoadMin)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", o.dbName, err)
	}
	e := &pgqEnv{cfg: cfg, pool: pool}
	if _, err := pgq.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	if e.client, err = pgq.NewClient(pool, otelClientOptions(o)...); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA bench;
		CREATE FUNCTION bench.noop(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
		CREATE TABLE bench.sql_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL);
		CREATE FUNCTION bench.insert_row(payload jsonb) RETURNS void LANGUAGE sql AS $$
			INSERT INTO bench.sql_rows (payload) VALUES (payload) $$;
		CREATE TABLE bench.sql_starts (seq bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE FUNCTION bench.note_start(payload jsonb) RETURNS void LANGUAGE sql AS $$
			INSERT INTO bench.sql_starts (seq) VALUES ((payload ->> 'seq')::bigint) $$;`); err != nil {
		pool.Close()
		return nil, fmt.Errorf("create bench.noop: %w", err)
	}
	if err := e.client.DefineJob(ctx, "noop_sql", pgq.Handler("bench.noop")); err != nil {
		pool.Close()
		return nil, err
	}
	if err := e.client.DefineJob(ctx, "insert_sql", pgq.Handler("bench.insert_row")); err != nil {
		pool.Close()
		return nil, err
	}
	if err := e.client.DefineJob(ctx, "seq_sql", pgq.Handler("bench.note_start")); err != nil {
		pool.Close()
		return nil, err
	}
	if err := e.client.DefineLimit(ctx, "bench_huge", 1_000_000_000, time.Hour); err != nil {
		pool.Close()
		return nil, err
	}
	if err := e.client.DefineConcurrency(ctx, "bench_conc", o.conc); err != nil {
		pool.Close()
		return nil, err
	}
	return e, nil
}

func (e *pgqEnv) close(ctx context.Context, o options) {
	e.pool.Close()
	if !o.keepDB {
		if err := dropDatabase(ctx, o, o.dbName); err != nil {
			fmt.Fprintln(os.Stderr, "bench: drop", o.dbName+":", err)
		}
	}
}

// workerPool opens a pool for one worker, as an application embedding it would.
func (e *pgqEnv) workerPool(ctx context.Context, o options, concurrency int, fnStats bool) (*pgxpool.Pool, error) {
	if concurrency == 0 {
		concurrency = 100 // the worker's default, used only to size the pool
	}
	cfg := e.cfg.Copy()
	cfg.MaxConns = int32(min(concurrency+3, o.poolSize))
	if fnStats {
		cfg.ConnConfig.RuntimeParams["track_functions"] = "all"
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("worker pool: %w", err)
	}
	return p, nil
}

// truncate empties pgq's tables before a run, the coordination rows that middleware and
// unique jobs leave included: a run that met the previous run's dead overlap leases
// (20,000 of them, for the keys it was about to take, never vacuumed on this server)
// drained without_overlapping jobs at three quarters of the rate of a run on an empty or
// vacuumed table, and the runs of one figure must measure the same thing.
func (e *pgqEnv) truncate(ctx context.Context) error {
	if _, err := e.pool.Exec(ctx, "TRUNCATE pgq.jobs, pgq.loads, pgq.attempts, pgq.failed_jobs, pgq.job_batches, pgq.batch_counts, pgq.job_chains, pgq.callbacks, pgq.job_ends, "+
		"pgq.overlap_locks, pgq.rate_limit_windows, pgq.circuits, pgq.unique_locks, pgq.debounce_tokens, bench.sql_rows, bench.sql_starts"); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return nil
}

// pgqScenario is one configuration of pgq's drain benchmark.
type pgqScenario struct {
	name        string
	row         string // summary row of the drain rate
	insertRow   string // summary row of the insert rate, if any
	label       string
	job         string // job name dispatched
	jobs        int
	concurrency int // 0: the worker's default
	workers     int // > 1: that many workers in this process share concurrency and the pool
	sqlHandler  bool
	rows        string                      // a table the handler inserts one row into per job: verified, then emptied
	failOnce    bool                        // the handler fails attempt 1 and succeeds on attempt 2
	limit       int                         // > 0: the run fails when more handlers than this ran at once
	batch       bool                        // the backlog is one batch (DispatchBatch, then AddToBatch)
	payload     func(i int) json.RawMessage // nil: {}
	dispatch    []pgq.Option
	workerOpts  []worker.Option
}

func (e *pgqEnv) scenario(o options, name string) pgqScenario {
	mw := func(m pgq.Middleware) []pgq.Option { return []pgq.Option{pgq.WithMiddleware(m)} }
	switch name {
	case "drain":
		return pgqScenario{name: name, row: "drain", insertRow: "drain-insert", job: "noop", jobs: o.jobs, concurrency: o.conc}
	case "drain-go":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain-go, %d jobs, jobs/s (worker default concurrency)", o.jobs),
			job: "noop", jobs: o.jobs}
	case "drain-go-c50":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain-go, %d jobs, jobs/s (concurrency %d)", o.jobs, o.highConc),
			job: "noop", jobs: o.jobs, concurrency: o.highConc}
	case "batch":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain one batch of %d no-op jobs, jobs/s (worker default concurrency): compare with drain-go", o.jobs),
			job: "noop", jobs: o.jobs, batch: true}
	case "drain-sql":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs with a SQL-function handler, jobs/s (worker default concurrency, pool %d)", o.sqlJobs, o.poolSize),
			job: "noop_sql", jobs: o.sqlJobs, sqlHandler: true}
	case "drain-sql-insert":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs whose SQL handler inserts one row, jobs/s (worker default concurrency, pool %d): compare with pgbench-insert", o.sqlJobs, o.poolSize),
			job: "insert_sql", jobs: o.sqlJobs, sqlHandler: true, rows: "bench.sql_rows"}
	case "plain":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d no-op jobs, no middleware, jobs/s (concurrency %d): reference for the rows below", o.extraJobs, o.conc),
			job: "noop", jobs: o.extraJobs, concurrency: o.conc}
	case "retry":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs that fail once and retry, jobs/s (concurrency %d)", o.extraJobs, o.conc),
			job: "noop_retry", jobs: o.extraJobs, concurrency: o.conc, failOnce: true,
			workerOpts: []worker.Option{worker.WithTries(2), worker.WithBackoff(0)}}
	case "mw-overlap":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs with without_overlapping (per-job key), jobs/s (concurrency %d)", o.extraJobs, o.conc),
			job: "noop_overlap", jobs: o.extraJobs, concurrency: o.conc,
			payload:  func(i int) json.RawMessage { return json.RawMessage(`{"k":` + strconv.Itoa(i) + `}`) },
			dispatch: mw(pgq.WithoutOverlapping{By: []string{"k"}})}
	case "mw-ratelimit":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs with rate_limited (huge budget), jobs/s (concurrency %d)", o.extraJobs, o.conc),
			job: "noop_ratelimit", jobs: o.extraJobs, concurrency: o.conc,
			dispatch: mw(pgq.RateLimited{Limit: "bench_huge"})}
	case "mw-concurrency":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs under concurrency_limited (one key, limit %d = the concurrency), jobs/s (4 workers, concurrency %d in all)", o.extraJobs, o.conc, o.conc),
			job: "noop_concurrency", jobs: o.extraJobs, concurrency: o.conc, workers: 4, limit: o.conc,
			dispatch: mw(pgq.ConcurrencyLimited{Named: "bench_conc"})}
	case "mw-concurrency-off":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d no-op jobs as mw-concurrency does without its limit, jobs/s (4 workers, concurrency %d in all): reference for mw-concurrency", o.extraJobs, o.conc),
			job: "noop", jobs: o.extraJobs, concurrency: o.conc, workers: 4}
	case "mw-throttle":
		return pgqScenario{name: name, row: name, label: fmt.Sprintf("pgq only: drain %d jobs with throttles_exceptions (no exceptions), jobs/s (concurrency %d)", o.extraJobs, o.conc),
			job: "noop_throttle", jobs: o.extraJobs, concurrency: o.conc,
			dispatch: mw(pgq.ThrottlesExceptions{})}
	}
	panic("unknown pgq scenario " + name)
}

// drainResult is one backlog drain of any system.
type drainResult struct {
	jobs      int
	insert    time.Duration
	drain     time.Duration
	u         usage
	client    string // what "client" cores means
	warnings  int
	firstWarn string  // the first lines the worker logged, when any
	othersMax int     // most active sessions seen in other databases (sampled every 2 s)
	othersPct float64 // share of samples that saw any
	half1     float64 // jobs/s over the first half of the backlog
	half2     float64 // jobs/s over the second half
	note      string
}

func (d drainResult) out(row, insertRow string) runOut {
	var r runOut
	r.rows = []string{row}
	r.add(row, float64(d.jobs)/d.drain.Seconds())
	if insertRow != "" {
		r.rows = append(r.rows, insertRow)
		r.add(insertRow, float64(d.jobs)/d.insert.Seconds())
	}
	r.otherCores = d.u.otherCores
	var parts []string
	if d.insert > 0 {
		parts = append(parts, fmt.Sprintf("insert %d jobs in %s (%.0f jobs/s)", d.jobs, d.insert.Round(time.Millisecond),
			float64(d.jobs)/d.insert.Seconds()))
	}
	if d.drain > 0 {
		s := fmt.Sprintf("drain in %s = %.0f jobs/s", d.drain.Round(time.Millisecond), float64(d.jobs)/d.drain.Seconds())
		if d.half1 > 0 {
			s += fmt.Sprintf(" (1st half %.0f, 2nd half %.0f)", d.half1, d.half2)
		}
		parts = append(parts, s, d.u.cores(d.client, int64(d.jobs)),
			fmt.Sprintf("other-db active sessions: max %d, in %.0f%% of samples", d.othersMax, d.othersPct))
	}
	if d.note != "" {
		parts = append(parts, d.note)
	}
	r.line = strings.Join(parts, " | ")
	r.line += fmt.Sprintf(" | warnings logged %d", d.warnings)
	if d.warnings > 0 {
		r.line += " (first: " + d.firstWarn + ")"
	}
	r.line = strings.TrimPrefix(r.line, " | ")
	return r
}

// drain empties the queue, inserts the backlog, drains it with one worker and verifies
// the outcome.
func (e *pgqEnv) drain(ctx context.Context, o options, sc pgqScenario, profile bool) runOut {
	d := drainResult{jobs: sc.jobs, client: "bench"}
	fail := func(err error) runOut {
		r := d.out(sc.row, sc.insertRow)
		r.figs, r.err = nil, err
		return r
	}
	if err := e.truncate(ctx); err != nil {
		return fail(err)
	}

	// Insert the backlog.
	var batchID uuid.UUID
	var err error
	payloads := make([]any, min(o.batch, sc.jobs))
	start := time.Now()
	for done := 0; done < sc.jobs; done += len(payloads) {
		n := min(sc.jobs-done, o.batch)
		payloads = payloads[:n]
		for i := range payloads {
			if sc.payload != nil {
				payloads[i] = sc.payload(done + i)
			} else {
				payloads[i] = json.RawMessage(`{}`)
			}
		}
		if sc.batch {
			members := make([]pgq.BatchMember, n)
			for i, p := range payloads {
				members[i] = pgq.BatchJob(sc.job, p, sc.dispatch...)
			}
			var added int
			if done == 0 {
				batchID, err = e.client.DispatchBatch(ctx, members, pgq.BatchOptions{Name: "bench"})
				added = n
			} else {
				added, err = e.client.AddToBatch(ctx, batchID, members)
			}
			if err != nil {
				return fail(fmt.Errorf("insert: %w", err))
			}
			if added != n {
				return fail(fmt.Errorf("insert: %d members added of %d", added, n))
			}
			continue
		}
		ids, err := e.client.DispatchMany(ctx, sc.job, payloads, sc.dispatch...)
		if err != nil {
			return fail(fmt.Errorf("insert: %w", err))
		}
		if len(ids) != n {
			return fail(fmt.Errorf("insert: DispatchMany returned %d uuids for %d payloads", len(ids), n))
		}
	}
	d.insert = time.Since(start)

	wpool, err := e.workerPool(ctx, o, sc.concurrency, profile && o.fnStats)
	if err != nil {
		return fail(err)
	}
	wpoolClosed := false
	defer func() {
		if !wpoolClosed {
			wpool.Close()
		}
	}()
	logs := &logCounter{}
	opts := []worker.Option{
		worker.WithStopWhenEmpty(),
		worker.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		worker.WithFetchCooldown(o.pgqFetchCooldown), worker.WithVacuumAfter(o.pgqVacuumAfter),
		worker.WithSlotSize(int64(o.pgqSlotMB) << 20),
	}
	workers := max(1, sc.workers)
	if sc.concurrency > 0 {
		opts = append(opts, worker.WithConcurrency(max(1, sc.concurrency/workers)))
	}
	if sc.sqlHandler {
		opts = append(opts, worker.WithSQLGroupBudget(o.sqlGroup), worker.WithSQLGroups(o.sqlGroups))
	}
	opts = append(opts, sc.workerOpts...)
	opts = append(opts, otelWorkerOptions(o)...)
	ws := make([]*worker.Worker, workers)
	for i := range ws {
		if ws[i], err = worker.New(wpool, append(opts, worker.WithName(fmt.Sprintf("bench-%d", i)))...); err != nil {
			return fail(err)
		}
	}
	var running, mostRunning atomic.Int64
	for _, w := range ws {
		if sc.sqlHandler {
			break
		}
		failOnce, limit := sc.failOnce, sc.limit
		worker.Handle(w, sc.job, worker.Handler[json.RawMessage]{
			Run: func(_ context.Context, j *worker.Job[json.RawMessage]) error {
				if limit > 0 {
					n := running.Add(1)
					defer running.Add(-1)
					for m := mostRunning.Load(); n > m && !mostRunning.CompareAndSwap(m, n); m = mostRunning.Load() {
					}
				}
				if failOnce && j.Attempt == 1 {
					return errors.New("bench: fail the first attempt")
				}
				return nil
			},
		})
	}

	if profile && o.fnStats {
		// Close the insert connections first: a backend flushes its pending statistics
		// when it exits, and they must not land after the reset.
		e.pool.Reset()
		time.Sleep(500 * time.Millisecond)
		if _, err := e.pool.Exec(ctx, "SELECT pg_stat_reset()"); err != nil {
			return fail(fmt.Errorf("pg_stat_reset: %w", err))
		}
	}
	if d.note, err = prepare(ctx, o, e.pool, "pgq.jobs"); err != nil {
		return fail(err)
	}
	var stopProfile func()
	if profile && o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fail(err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}

	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	m, err := startMeter(ctx, e.pool)
	if err != nil {
		return fail(err)
	}
	smp := startSampler(ctx, e.pool, m.start, sc.jobs, "SELECT count(*) FROM pgq.attempts WHERE outcome = 'succeeded'")
	runErrs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { runErrs[i] = w.Run(dctx) })
	}
	wg.Wait()
	runErr := errors.Join(runErrs...)
	d.drain = time.Since(m.start)
	d.u, err = m.stop(ctx)
	smp.stop()
	if stopProfile != nil {
		stopProfile()
		fmt.Printf("(CPU profile of this drain written to %s)\n", o.cpuProfile)
	}
	if err != nil {
		return fail(err)
	}
	d.othersMax, d.othersPct = smp.others()
	d.half1, d.half2 = smp.halves(d.drain)
	d.warnings = logs.count()
	d.firstWarn = logs.first()
	wpool.Close() // ends the worker's backends, which flushes their statistics
	wpoolClosed = true
	if runErr != nil {
		return fail(fmt.Errorf("worker.Run: %w (first log lines: %s)", runErr, logs.first()))
	}
	if dctx.Err() != nil {
		return fail(fmt.Errorf("drain did not finish within -timeout %s", o.timeout))
	}
	failedAttempts := 0
	if sc.failOnce {
		failedAttempts = sc.jobs
	}
	if sc.limit > 0 && mostRunning.Load() > int64(sc.limit) {
		return fail(fmt.Errorf("%d handlers ran at once under a concurrency limit of %d", mostRunning.Load(), sc.limit))
	}
	if err := e.verify(ctx, sc.job, sc.jobs, failedAttempts); err != nil {
		if d.warnings > failedAttempts {
			err = fmt.Errorf("%w (worker logged %d warnings, first: %s)", err, d.warnings, logs.first())
		}
		return fail(err)
	}
	if sc.rows != "" {
		var n int
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM "+sc.rows).Scan(&n); err != nil || n != sc.jobs {
			return fail(fmt.Errorf("verify %s: want %d rows, one per job, got %d (%v)", sc.rows, sc.jobs, n, err))
		}
	}
	if sc.batch {
		var succeeded int
		var finished bool
		err := e.pool.QueryRow(ctx, `SELECT succeeded_jobs, finished_at IS NOT NULL FROM pgq.batches WHERE id = $1`, batchID).
			Scan(&succeeded, &finished)
		if err != nil || succeeded != sc.jobs || !finished {
			return fail(fmt.Errorf("verify batch: want %d succeeded and finished, got %d, %v (%v)", sc.jobs, succeeded, finished, err))
		}
	}
	if profile && o.fnStats {
		if err := printServerStats(ctx, e.pool, sc.jobs); err != nil {
			return fail(err)
		}
	}
	out := d.out(sc.row, sc.insertRow)
	if sc.failOnce {
		out.line += " (one expected warning per first attempt)"
	}
	return out
}

// verify checks that each of jobs jobs named job succeeded exactly once, after exactly
// failed failed attempts in all, and that nothing else is left.
func (e *pgqEnv) verify(ctx context.Context, job string, jobs, failed int) error {
	var live, attempts, succeeded, failedAttempts, distinct, distinctOK, failedJobs int
	err := e.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM pgq.live_jobs),
			(SELECT count(*) FROM pgq.attempts),
			(SELECT count(*) FROM pgq.attempts WHERE outcome = 'succeeded' AND job = $1),
			(SELECT count(*) FROM pgq.attempts WHERE outcome = 'failed' AND NOT final AND job = $1),
			(SELECT count(DISTINCT job_uuid) FROM pgq.attempts),
			(SELECT count(DISTINCT job_uuid) FROM pgq.attempts WHERE outcome = 'succeeded'),
			(SELECT count(*) FROM pgq.failed_jobs)`, job).
		Scan(&live, &attempts, &succeeded, &failedAttempts, &distinct, &distinctOK, &failedJobs)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if live != 0 || attempts != jobs+failed || succeeded != jobs || failedAttempts != failed || distinct != jobs ||
		distinctOK != jobs || failedJobs != 0 {
		return fmt.Errorf("verify: want 0 live jobs and %d succeeded attempts (+%d failed) of %d distinct jobs, got %d live jobs, %d attempts (%d succeeded %s of %d distinct jobs, %d failed), %d distinct jobs, %d failed jobs",
			jobs, failed, jobs, live, attempts, succeeded, job, distinctOK, failedAttempts, distinct, failedJobs)
	}
	return nil
}

// bulk times DispatchMany of o.jobs jobs into an empty queue, by COPY with byCopy.
func (e *pgqEnv) bulk(ctx context.Context, o options, byCopy bool) runOut {
	row, api, opts := "bulk-many", "DispatchMany", []pgq.Option(nil)
	if byCopy {
		row, api, opts = "bulk-copy", "DispatchMany ByCopy", []pgq.Option{pgq.ByCopy()}
	}
	r := runOut{rows: []string{row}}
	if err := e.truncate(ctx); err != nil {
		r.err = err
		return r
	}
	note, err := prepare(ctx, o, e.pool, "")
	if err != nil {
		r.err = err
		return r
	}
	payloads := make([]any, min(o.batch, o.jobs))
	for i := range payloads {
		payloads[i] = json.RawMessage(`{}`)
	}
	m, err := startMeter(ctx, e.pool)
	if err != nil {
		r.err = err
		return r
	}
	for done := 0; done < o.jobs; done += o.batch {
		n := min(o.jobs-done, o.batch)
		if _, err := e.client.DispatchMany(ctx, "noop", payloads[:n], opts...); err != nil {
			r.err = fmt.Errorf("%s: %w", api, err)
			return r
		}
	}
	u, err := m.stop(ctx)
	if err != nil {
		r.err = err
		return r
	}
	r.otherCores = u.otherCores
	rate := float64(o.jobs) / u.elapsed.Seconds()
	r.line = fmt.Sprintf("%s %d jobs in %s = %.0f jobs/s | %s", api, o.jobs, u.elapsed.Round(time.Millisecond), rate,
		u.cores("bench", int64(o.jobs)))
	if note != "" {
		r.line += " | " + note
	}
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pgq.live_jobs WHERE job = 'noop'`).Scan(&n); err != nil {
		r.err = err
		return r
	}
	if n != o.jobs {
		r.err = fmt.Errorf("verify: want %d live jobs, got %d", o.jobs, n)
		return r
	}
	r.add(row, rate)
	return r
}

// pgqLive runs pgq workers for the steady and latency scenarios.
type pgqLive struct {
	e           *pgqEnv
	concurrency int  // 0: the worker's default
	workers     int  // > 1: that many workers in this process share concurrency and the pool
	sql         bool // the jobs are seq_sql's: a SQL handler notes its start in bench.sql_starts
}

func (e *pgqEnv) live(concurrency int) *pgqLive { return &pgqLive{e: e, concurrency: concurrency} }

// liveSQL runs SQL jobs (seq_sql) at the worker's defaults.
func (e *pgqEnv) liveSQL() *pgqLive { return &pgqLive{e: e, sql: true} }

// job is the class the live scenarios dispatch.
func (l *pgqLive) job() string {
	if l.sql {
		return "seq_sql"
	}
	return "seq"
}

// startTimes reads when each SQL handler started, by seq (its own clock_timestamp());
// nil for Go jobs, whose start the handler reports.
func (l *pgqLive) startTimes(ctx context.Context) (map[int64]time.Time, error) {
	if !l.sql {
		return nil, nil
	}
	rows, err := l.e.pool.Query(ctx, "SELECT seq, at FROM bench.sql_starts")
	if err != nil {
		return nil, err
	}
	at := map[int64]time.Time{}
	var seq int64
	var t time.Time
	_, err = pgx.ForEachRow(rows, []any{&seq, &t}, func() error { at[seq] = t; return nil })
	return at, err
}

// watchSQL calls onRun once for each seq a SQL handler committed, polling
// bench.sql_starts every 10 ms from the lowest seq not seen yet (groups may commit out
// of order), until ctx ends: the runs that the latency scenario waits for and verifies.
func (l *pgqLive) watchSQL(ctx context.Context, onRun func(seq int64)) {
	low, seen := int64(0), map[int64]bool{}
	for ctx.Err() == nil {
		rows, err := l.e.pool.Query(ctx, "SELECT seq FROM bench.sql_starts WHERE seq >= $1", low)
		if err == nil {
			var seq int64
			_, err = pgx.ForEachRow(rows, []any{&seq}, func() error {
				if !seen[seq] {
					seen[seq] = true
					onRun(seq)
				}
				return nil
			})
		}
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "watchSQL:", err)
		}
		for seen[low] {
			delete(seen, low)
			low++
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type seqArgs struct {
	Seq int64 `json:"seq"`
}

func (l *pgqLive) name() string                    { return "pgq" }
func (l *pgqLive) pool() *pgxpool.Pool             { return l.e.pool }
func (l *pgqLive) reset(ctx context.Context) error { return l.e.truncate(ctx) }

func (l *pgqLive) start(ctx context.Context, o options, onRun func(seq int64)) (func() (int, error), error) {
	wpool, err := l.e.workerPool(ctx, o, l.concurrency, false)
	if err != nil {
		return nil, err
	}
	logs := &logCounter{}
	var log slog.Handler = slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})
	closeLog := func() error { return nil }
	if o.pgqLog != "" {
		f, err := os.OpenFile(o.pgqLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			wpool.Close()
			return nil, err
		}
		closeLog = f.Close
		log = slog.NewMultiHandler(log, noJobLines{slog.NewTextHandler(f, nil)})
	}
	opts := []worker.Option{
		worker.WithLogger(slog.New(log)),
		worker.WithFetchCooldown(o.pgqFetchCooldown), worker.WithVacuumAfter(o.pgqVacuumAfter),
		worker.WithSlotSize(int64(o.pgqSlotMB) << 20),
	}
	if l.concurrency > 0 {
		opts = append(opts, worker.WithConcurrency(l.concurrency))
	}
	opts = append(opts, otelWorkerOptions(o)...)
	w, err := worker.New(wpool, opts...)
	if err != nil {
		wpool.Close()
		return nil, errors.Join(err, closeLog())
	}
	worker.Handle(w, "seq", worker.Handler[seqArgs]{
		Run: func(_ context.Context, j *worker.Job[seqArgs]) error { onRun(j.Args.Seq); return nil },
	})
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = w.Run(wctx) })
	if l.sql {
		wg.Go(func() { l.watchSQL(wctx, onRun) })
	}
	return func() (int, error) {
		cancel()
		wg.Wait()
		wpool.Close()
		if runErr != nil {
			return logs.count(), errors.Join(fmt.Errorf("worker.Run: %w (first log lines: %s)", runErr, logs.first()), closeLog())
		}
		return logs.count(), closeLog()
	}, nil
}

func (l *pgqLive) dispatch(ctx context.Context, seqs []int64) error {
	if len(seqs) == 1 {
		_, err := l.e.client.Dispatch(ctx, l.job(), seqArgs{seqs[0]})
		return err
	}
	args := make([]any, len(seqs))
	for i, s := range seqs {
		args[i] = seqArgs{s}
	}
	_, err := l.e.client.DispatchMany(ctx, l.job(), args)
	return err
}

func (l *pgqLive) prepare(ctx context.Context, fair bool) error {
	if err := l.e.truncate(ctx); err != nil {
		return err
	}
	if _, err := l.e.pool.Exec(ctx, "TRUNCATE pgq.fair_turns"); err != nil {
		return err
	}
	var opts []pgq.QueueOption
	if fair {
		opts = append(opts, pgq.FairBy("tenant"))
	}
	return l.e.client.DefineQueue(ctx, "default", 90*time.Second, false, opts...)
}

func (l *pgqLive) jobsTable() string { return "pgq.jobs" }

func (l *pgqLive) dispatchStarv(ctx context.Context, args []starvArgs) error {
	if len(args) == 1 {
		_, err := l.e.client.Dispatch(ctx, "seq", args[0])
		return err
	}
	payloads := make([]any, len(args))
	for i, a := range args {
		payloads[i] = a
	}
	_, err := l.e.client.DispatchMany(ctx, "seq", payloads)
	return err
}

func (l *pgqLive) completed(ctx context.Context) (int64, error) {
	var n int64
	err := l.e.pool.QueryRow(ctx, "SELECT count(*) FROM pgq.attempts WHERE outcome = 'succeeded'").Scan(&n)
	return n, err
}

func (l *pgqLive) verifyDone(ctx context.Context, n int64) error {
	return l.e.verify(ctx, l.job(), int(n), 0)
}

// printServerStats prints where PostgreSQL spent its time during the drain, from
// pg_stat_user_functions (track_functions=all on the worker's connections) and the
// table statistics, reset just before the drain.
func printServerStats(ctx context.Context, pool *pgxpool.Pool, jobs int) error {
	time.Sleep(time.Second) // let the worker's exiting backends flush their statistics
	fmt.Println("\nserver-side: pg_stat_user_functions during the drain (times in ms; self excludes nested pgq calls)")
	rows, err := pool.Query(ctx, `SELECT schemaname || '.' || funcname, calls, total_time, self_time
		FROM pg_stat_user_functions ORDER BY total_time DESC`)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "function\tcalls\ttotal ms\tself ms\tµs/call\tjobs/call\t")
	for rows.Next() {
		var name string
		var calls int64
		var total, self float64
		if err := rows.Scan(&name, &calls, &total, &self); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.1f\t\n", name, calls, total, self, 1000*total/float64(calls),
			float64(jobs)/float64(calls))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	tw.Flush()

	fmt.Println("\nserver-side: table statistics during the drain")
	rows, err = pool.Query(ctx, `SELECT relname, seq_scan, idx_scan, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
			n_dead_tup, autovacuum_count
		FROM pg_stat_user_tables WHERE schemaname = 'pgq' AND (relname = 'attempts' OR relname LIKE 'jobs\_%') ORDER BY relname`)
	if err != nil {
		return err
	}
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tseq_scan\tidx_scan\tins\tupd\thot_upd\tdel\tdead now\tautovacuums\t")
	for rows.Next() {
		var name string
		var a, b, c, d, e, f, g, h int64
		if err := rows.Scan(&name, &a, &b, &c, &d, &e, &f, &g, &h); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, a, b, c, d, e, f, g, h)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	tw.Flush()

	var commits, rollbacks int64
	if err := pool.QueryRow(ctx, `SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()`).
		Scan(&commits, &rollbacks); err != nil {
		return err
	}
	fmt.Printf("\ntransactions during the drain: %d commits (%.2f per job), %d rollbacks\n\n",
		commits, float64(commits)/float64(jobs), rollbacks)
	return nil
}

// noJobLines drops the worker's line per job (info level: "job succeeded" and the like),
// tens of thousands a second here, and keeps what the worker says about itself.
type noJobLines struct{ slog.Handler }

func (h noJobLines) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn && strings.HasPrefix(r.Message, "job ") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h noJobLines) WithAttrs(as []slog.Attr) slog.Handler {
	return noJobLines{h.Handler.WithAttrs(as)}
}
func (h noJobLines) WithGroup(name string) slog.Handler { return noJobLines{h.Handler.WithGroup(name)} }

// bulkShapeSizes are the sizes of one bulk dispatch that bulk-shape compares: a
// dispatch's time must grow linearly with its payload count.
var bulkShapeSizes = []int{20000, 200000}

// bulkShape times one DispatchMany call of each of bulkShapeSizes payloads of about 1
// KiB into an empty table, as one jsonb[] and ByCopy, and records the time per payload
// and the ratio of the largest size's to the smallest's (1: linear).
func (e *pgqEnv) bulkShape(ctx context.Context, o options) runOut {
	r := runOut{rows: []string{"shape-many-ratio", "shape-copy-ratio"}}
	pad := strings.Repeat("x", 1000)
	for _, byCopy := range []bool{false, true} {
		kind, opts := "many", []pgq.Option(nil)
		if byCopy {
			kind, opts = "copy", []pgq.Option{pgq.ByCopy()}
		}
		perPayload := map[int]float64{}
		for _, n := range bulkShapeSizes {
			row := fmt.Sprintf("shape-%s-%d", kind, n)
			r.rows = append(r.rows, row)
			if err := e.truncate(ctx); err != nil {
				r.err = err
				return r
			}
			payloads := make([]any, n)
			for i := range payloads {
				payloads[i] = json.RawMessage(fmt.Sprintf(`{"n": %d, "pad": %q}`, i, pad))
			}
			if _, err := prepare(ctx, o, e.pool, ""); err != nil {
				r.err = err
				return r
			}
			start := time.Now()
			if _, err := e.client.DispatchMany(ctx, "noop", payloads, opts...); err != nil {
				r.err = fmt.Errorf("%s of %d: %w", kind, n, err)
				return r
			}
			perPayload[n] = float64(time.Since(start).Microseconds()) / float64(n)
			r.add(row, perPayload[n])
		}
		first, last := bulkShapeSizes[0], bulkShapeSizes[len(bulkShapeSizes)-1]
		ratio := perPayload[last] / perPayload[first]
		r.add("shape-"+kind+"-ratio", ratio)
		r.line += fmt.Sprintf("%s: %.1f µs/payload at %d, %.1f at %d (%.2f×); ", kind, perPayload[first], first,
			perPayload[last], last, ratio)
	}
	return r
}
