// Command bench measures pgq's throughput on a real PostgreSQL: it inserts a backlog of
// no-op jobs with Client.DispatchMany, then times one worker draining it, for a Go
// handler at the default concurrency, a Go handler at a higher concurrency, and a SQL
// function handler. Each scenario runs -runs times from an empty queue, every run is
// verified against pgq.jobs and pgq.attempts, and a summary gives median, min and max.
//
//	go run . [-runs 3] [-jobs 100000] [-sql-jobs 20000] [-scenarios drain-go,drain-go-c50,drain-sql]
//
// DATABASE_URL names the server (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the benchmark drops and
// recreates its own database (-db, default pgq_bench) on it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

type options struct {
	adminURL    string
	dbName      string
	runs        int
	jobs        int
	sqlJobs     int
	batch       int
	highConc    int
	scenarios   []string
	analyze     bool
	checkpoint  bool
	timeout     time.Duration
	quietCores  float64
	quietMax    time.Duration
	cpuProfile  string
	fnStats     bool
	keepDB      bool
	markdownOut bool
}

// scenario is one configuration of the drain benchmark.
type scenario struct {
	name        string
	label       string // as shown in the summary
	job         string // job name dispatched
	jobs        int
	concurrency int // 0: the worker's default
	sqlHandler  bool
}

// result is one run of a scenario.
type result struct {
	insert      time.Duration
	drain       time.Duration
	jobs        int
	clientCores float64       // cores used by this process during the drain
	pgCores     float64       // cores used by postgres processes (all databases) during the drain
	otherCores  float64       // cores used by everything else on the machine during the drain
	walBytes    int64         // WAL written during the drain
	warnings    int           // worker log records at Warn or above
	othersMax   int           // most active sessions seen in other databases (sampled every 2 s)
	othersPct   float64       // share of samples that saw any
	half1       float64       // jobs/s over the first half of the backlog
	half2       float64       // jobs/s over the second half
	waited      time.Duration // spent waiting for a quiet machine before the drain
	notQuiet    bool          // the machine was still busy when the wait gave up
	err         error         // run or verification failure
}

func (r result) drainRate() float64  { return float64(r.jobs) / r.drain.Seconds() }
func (r result) insertRate() float64 { return float64(r.jobs) / r.insert.Seconds() }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() options {
	var o options
	var scen string
	def := os.Getenv("DATABASE_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.adminURL, "url", def, "server to benchmark against, from $DATABASE_URL when set; -db is created on it")
	flag.StringVar(&o.dbName, "db", "pgq_bench", "database to drop, create and migrate")
	flag.IntVar(&o.runs, "runs", 3, "runs per scenario")
	flag.IntVar(&o.jobs, "jobs", 100000, "backlog size for the Go-handler scenarios")
	flag.IntVar(&o.sqlJobs, "sql-jobs", 20000, "backlog size for the SQL-handler scenario")
	flag.IntVar(&o.batch, "batch", 1000, "jobs per DispatchMany call while inserting the backlog")
	flag.IntVar(&o.highConc, "high-concurrency", 50, "concurrency of the drain-go-c50 scenario")
	flag.StringVar(&scen, "scenarios", "drain-go,drain-go-c50,drain-sql", "comma-separated scenarios to run")
	flag.BoolVar(&o.analyze, "analyze", true, "ANALYZE pgq.jobs after inserting the backlog (untimed)")
	flag.BoolVar(&o.checkpoint, "checkpoint", true, "CHECKPOINT before each drain (untimed)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on a drain after this long")
	flag.Float64Var(&o.quietCores, "quiet-cores", 0.25, "before each drain, wait until other processes (PostgreSQL included) use fewer cores than this over 3 s; 0 does not wait")
	flag.DurationVar(&o.quietMax, "quiet-max", 5*time.Minute, "longest wait for a quiet machine before draining anyway")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the first drain (first run of the first scenario) to this file")
	flag.BoolVar(&o.fnStats, "fnstats", false, "track_functions=all on the worker's connections and print pg_stat_user_functions, table statistics and transactions per job after the first drain (first run of the first scenario); it slows the drain a little")
	flag.BoolVar(&o.keepDB, "keep-db", true, "leave the benchmark database in place at the end")
	flag.BoolVar(&o.markdownOut, "markdown", true, "also print the summary as a Markdown table")
	flag.Parse()
	for s := range strings.SplitSeq(scen, ",") {
		if s = strings.TrimSpace(s); s != "" {
			o.scenarios = append(o.scenarios, s)
		}
	}
	return o
}

func run() error {
	o := parseFlags()
	if o.runs < 1 || o.jobs < 1 || o.sqlJobs < 1 || o.batch < 1 || o.highConc < 1 {
		return errors.New("-runs, -jobs, -sql-jobs, -batch and -high-concurrency must be >= 1")
	}
	known := map[string]scenario{
		"drain-go":     {name: "drain-go", label: "drain-go (concurrency=10, default)", job: "noop", jobs: o.jobs},
		"drain-go-c50": {name: "drain-go-c50", label: fmt.Sprintf("drain-go concurrency=%d", o.highConc), job: "noop", jobs: o.jobs, concurrency: o.highConc},
		"drain-sql":    {name: "drain-sql", label: "drain-sql (concurrency=10, default)", job: "noop_sql", jobs: o.sqlJobs, sqlHandler: true},
	}
	var scenarios []scenario
	for _, s := range o.scenarios {
		sc, ok := known[s]
		if !ok {
			return fmt.Errorf("unknown scenario %q (known: drain-go, drain-go-c50, drain-sql)", s)
		}
		scenarios = append(scenarios, sc)
	}

	ctx := context.Background()
	cfg, err := createDatabase(ctx, o)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return fmt.Errorf("connect %s: %w", o.dbName, err)
	}
	defer pool.Close()
	if err := printEnvironment(ctx, pool); err != nil {
		return err
	}
	if _, err := pgq.Migrate(ctx, pool); err != nil {
		return err
	}
	client, err := pgq.NewClient(pool)
	if err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA bench;
		CREATE FUNCTION bench.noop(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;`); err != nil {
		return fmt.Errorf("create bench.noop: %w", err)
	}
	if err := client.DefineJob(ctx, "noop_sql", pgq.Handler("bench.noop")); err != nil {
		return err
	}

	fmt.Printf("\nscenarios: %s; %d run(s) each; Go-handler backlog %d jobs, SQL-handler backlog %d jobs; insert batch %d\n",
		strings.Join(o.scenarios, ", "), o.runs, o.jobs, o.sqlJobs, o.batch)
	fmt.Printf("untimed between insert and drain: ANALYZE pgq.jobs=%v, CHECKPOINT=%v\n\n", o.analyze, o.checkpoint)

	results := map[string][]result{}
	profiled := false
	failed := false
	for _, sc := range scenarios {
		for i := 1; i <= o.runs; i++ {
			profile := !profiled && (o.cpuProfile != "" || o.fnStats)
			profiled = profiled || profile
			r := runOnce(ctx, o, pool, client, cfg, sc, profile)
			results[sc.name] = append(results[sc.name], r)
			status := "ok"
			if r.err != nil {
				status = "FAILED: " + r.err.Error()
				failed = true
			}
			fmt.Printf("%-13s run %d/%d: insert %d jobs in %s (%.0f jobs/s) | drain in %s = %.0f jobs/s (1st half %.0f, 2nd half %.0f) | cores busy: bench %.2f, postgres %.2f, other %.2f of %d | WAL %.0f B/job | other-db active sessions: max %d, in %.0f%% of samples | waited %s for quiet%s | worker warnings %d | %s\n",
				sc.name, i, o.runs, r.jobs, r.insert.Round(time.Millisecond), r.insertRate(),
				r.drain.Round(time.Millisecond), r.drainRate(), r.half1, r.half2,
				r.clientCores, r.pgCores, r.otherCores, runtime.NumCPU(),
				float64(r.walBytes)/float64(r.jobs), r.othersMax, r.othersPct, r.waited.Round(time.Second), notQuiet(r.notQuiet), r.warnings, status)
		}
	}
	printSummary(o, scenarios, results)

	if !o.keepDB {
		pool.Close()
		if err := dropDatabase(ctx, o); err != nil {
			return err
		}
	}
	if failed {
		return errors.New("at least one run failed verification (see FAILED above)")
	}
	return nil
}

// createDatabase drops and recreates o.dbName and returns a pool config for it.
func createDatabase(ctx context.Context, o options) (*pgxpool.Config, error) {
	admin, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", o.adminURL, err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{o.dbName}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return nil, fmt.Errorf("drop database: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(o.adminURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Database = o.dbName
	cfg.MaxConns = 4
	return cfg, nil
}

func dropDatabase(ctx context.Context, o options) error {
	admin, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{o.dbName}.Sanitize()+" WITH (FORCE)")
	return err
}

func printEnvironment(ctx context.Context, pool *pgxpool.Pool) error {
	var version string
	if err := pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return err
	}
	fmt.Println("PostgreSQL:", version)
	fmt.Printf("Go: %s %s/%s, GOMAXPROCS %d, NumCPU %d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.GOMAXPROCS(0), runtime.NumCPU())
	rows, err := pool.Query(ctx, `SELECT name, setting || coalesce(' ' || unit, '')
		FROM pg_settings
		WHERE name IN ('shared_buffers', 'synchronous_commit', 'max_connections', 'fsync', 'wal_level',
		               'max_wal_size', 'checkpoint_timeout', 'autovacuum', 'work_mem', 'full_page_writes',
		               'jit', 'track_functions')
		ORDER BY name`)
	if err != nil {
		return err
	}
	settings, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var n, v string
		err := r.Scan(&n, &v)
		return n + "=" + v, err
	})
	if err != nil {
		return err
	}
	fmt.Println("settings:", strings.Join(settings, ", "))
	return nil
}

// runOnce empties the queue, inserts the backlog, drains it with one worker and
// verifies the outcome.
func runOnce(ctx context.Context, o options, pool *pgxpool.Pool, client *pgq.Client, cfg *pgxpool.Config,
	sc scenario, profile bool) result {
	r := result{jobs: sc.jobs}
	fail := func(err error) result { r.err = err; return r }

	if _, err := pool.Exec(ctx, "TRUNCATE pgq.jobs, pgq.attempts, pgq.failed_jobs"); err != nil {
		return fail(fmt.Errorf("truncate: %w", err))
	}

	// Insert the backlog.
	payloads := make([]any, o.batch)
	for i := range payloads {
		payloads[i] = json.RawMessage(`{}`)
	}
	start := time.Now()
	for left := sc.jobs; left > 0; left -= o.batch {
		n := min(left, o.batch)
		ids, err := client.DispatchMany(ctx, sc.job, payloads[:n])
		if err != nil {
			return fail(fmt.Errorf("insert: %w", err))
		}
		if len(ids) != n {
			return fail(fmt.Errorf("insert: DispatchMany returned %d uuids for %d payloads", len(ids), n))
		}
	}
	r.insert = time.Since(start)
	if o.analyze {
		if _, err := pool.Exec(ctx, "ANALYZE pgq.jobs"); err != nil {
			return fail(fmt.Errorf("analyze: %w", err))
		}
	}
	if o.checkpoint {
		if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
			return fail(fmt.Errorf("checkpoint: %w", err))
		}
	}

	// The worker gets its own pool, as an application embedding it would.
	conc := sc.concurrency
	if conc == 0 {
		conc = 10 // the worker's default, used only to size the pool
	}
	wcfg := cfg.Copy()
	wcfg.MaxConns = int32(conc + 3)
	if profile && o.fnStats {
		wcfg.ConnConfig.RuntimeParams["track_functions"] = "all"
	}
	wpool, err := pgxpool.NewWithConfig(ctx, wcfg)
	if err != nil {
		return fail(fmt.Errorf("worker pool: %w", err))
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
	}
	if sc.concurrency > 0 {
		opts = append(opts, worker.WithConcurrency(sc.concurrency))
	}
	w, err := worker.New(wpool, opts...)
	if err != nil {
		return fail(err)
	}
	if !sc.sqlHandler {
		worker.Handle(w, sc.job, worker.Handler[json.RawMessage]{
			Run: func(context.Context, *worker.Job[json.RawMessage]) error { return nil },
		})
	}

	if profile && o.fnStats {
		// Close the insert connections first: a backend flushes its pending statistics
		// when it exits, and they must not land after the reset.
		pool.Reset()
		time.Sleep(500 * time.Millisecond)
		if _, err := pool.Exec(ctx, "SELECT pg_stat_reset()"); err != nil {
			return fail(fmt.Errorf("pg_stat_reset: %w", err))
		}
	}
	if o.quietCores > 0 {
		r.waited, r.notQuiet = waitQuiet(o.quietCores, o.quietMax)
	}
	var lsn0 string
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn0); err != nil {
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
	cpu0, mach0, pg0 := selfCPU(), readMachineCPU(), postgresCPU()
	start = time.Now()
	smp := startSampler(ctx, pool, start, sc.jobs)
	runErr := w.Run(dctx)
	r.drain = time.Since(start)
	cpu1, mach1, pg1 := selfCPU(), readMachineCPU(), postgresCPU()
	smp.stop()
	if stopProfile != nil {
		stopProfile()
		fmt.Printf("(CPU profile of this drain written to %s)\n", o.cpuProfile)
	}
	r.clientCores = (cpu1 - cpu0).Seconds() / r.drain.Seconds()
	r.pgCores = pg1.since(pg0).Seconds() / r.drain.Seconds()
	r.otherCores = max(0, mach1.busyCores(mach0)-r.clientCores-r.pgCores)
	r.othersMax, r.othersPct = smp.others()
	r.half1, r.half2 = smp.halves(r.drain)
	r.warnings = logs.count()
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn() - $1::pg_lsn", lsn0).Scan(&r.walBytes); err != nil {
		return fail(err)
	}
	wpool.Close() // ends the worker's backends, which flushes their statistics
	wpoolClosed = true
	if runErr != nil {
		return fail(fmt.Errorf("worker.Run: %w (first log lines: %s)", runErr, logs.first()))
	}
	if dctx.Err() != nil {
		return fail(fmt.Errorf("drain did not finish within -timeout %s", o.timeout))
	}
	if err := verify(ctx, pool, sc); err != nil {
		if r.warnings > 0 {
			err = fmt.Errorf("%w (worker logged %d warnings, first: %s)", err, r.warnings, logs.first())
		}
		return fail(err)
	}
	if profile && o.fnStats {
		if err := printServerStats(ctx, pool, sc.jobs); err != nil {
			return fail(err)
		}
	}
	return r
}

func notQuiet(b bool) string {
	if b {
		return " (gave up: NOT QUIET)"
	}
	return ""
}

// waitQuiet waits until the processes other than this one use fewer than cores cores
// over 3 s, or until limit has passed (then it reports false for quiet).
func waitQuiet(cores float64, limit time.Duration) (waited time.Duration, gaveUp bool) {
	start := time.Now()
	for {
		m0, c0 := readMachineCPU(), selfCPU()
		time.Sleep(3 * time.Second)
		m1, c1 := readMachineCPU(), selfCPU()
		busy := m1.busyCores(m0) - (c1-c0).Seconds()/3
		if busy < cores {
			return time.Since(start) - 3*time.Second, false
		}
		if time.Since(start) > limit {
			fmt.Printf("(machine still busy: %.2f cores used by other processes after waiting %s; draining anyway)\n",
				busy, time.Since(start).Round(time.Second))
			return time.Since(start), true
		}
	}
}

// sampler watches a drain every two seconds: how many attempts are recorded (for the
// first-half and second-half rates) and how many sessions of other databases are
// active: a benchmark sharing the server with other work is not measuring pgq alone.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time
	jobs   int

	mu        sync.Mutex
	times     []time.Duration
	finished  []int
	samples   int
	busy      int
	othersMax int
}

func startSampler(ctx context.Context, pool *pgxpool.Pool, start time.Time, jobs int) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{}), start: start, jobs: jobs}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var finished, others int
			err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pgq.attempts),
				(SELECT count(*) FROM pg_stat_activity
				 WHERE backend_type = 'client backend' AND state <> 'idle'
				   AND datname IS DISTINCT FROM current_database())`).Scan(&finished, &others)
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.times = append(s.times, time.Since(s.start))
			s.finished = append(s.finished, finished)
			s.samples++
			if others > 0 {
				s.busy++
			}
			s.othersMax = max(s.othersMax, others)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sampler) stop() { s.cancel(); <-s.done }

func (s *sampler) others() (int, float64) {
	if s.samples == 0 {
		return 0, 0
	}
	return s.othersMax, 100 * float64(s.busy) / float64(s.samples)
}

// halves returns the drain rate over the first and the second half of the backlog,
// interpolating when the half was crossed between two samples; 0s without samples.
func (s *sampler) halves(drain time.Duration) (float64, float64) {
	half := s.jobs / 2
	prevT, prevN := time.Duration(0), 0
	for i, n := range s.finished {
		if n >= half {
			t := prevT + time.Duration(float64(s.times[i]-prevT)*float64(half-prevN)/float64(max(1, n-prevN)))
			if t <= 0 || t >= drain {
				return 0, 0
			}
			return float64(half) / t.Seconds(), float64(s.jobs-half) / (drain - t).Seconds()
		}
		prevT, prevN = s.times[i], n
	}
	return 0, 0
}

// procCPU is the CPU time of each process named postgres, by pid.
type procCPU map[int]time.Duration

// postgresCPU reads /proc/[pid]/stat of every postgres process (this benchmark assumes
// the server runs on the same machine; elsewhere it reports 0).
func postgresCPU() procCPU {
	out := procCPU{}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open || string(b[open+1:closing]) != "postgres" {
			continue
		}
		f := strings.Fields(string(b[closing+1:])) // f[0] is field 3 (state)
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)               // field 14
		stime, _ := strconv.ParseInt(f[12], 10, 64)               // field 15
		out[pid] = time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	}
	return out
}

// since is the CPU the postgres processes alive now used after before was read
// (processes started since count from zero; those that ended are missed).
func (p procCPU) since(before procCPU) time.Duration {
	var d time.Duration
	for pid, t := range p {
		d += t - before[pid]
	}
	return d
}

// verify checks that every job of the run ran exactly once and succeeded.
func verify(ctx context.Context, pool *pgxpool.Pool, sc scenario) error {
	var live, attempts, succeeded, distinct, failedJobs int
	err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM pgq.jobs),
			(SELECT count(*) FROM pgq.attempts),
			(SELECT count(*) FROM pgq.attempts WHERE outcome = 'succeeded' AND job = $1),
			(SELECT count(DISTINCT job_uuid) FROM pgq.attempts),
			(SELECT count(*) FROM pgq.failed_jobs)`, sc.job).Scan(&live, &attempts, &succeeded, &distinct, &failedJobs)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if live != 0 || attempts != sc.jobs || succeeded != sc.jobs || distinct != sc.jobs || failedJobs != 0 {
		return fmt.Errorf("verify: want 0 live jobs and %d succeeded attempts of %d distinct jobs, got %d live jobs, %d attempts (%d succeeded %s, %d distinct jobs), %d failed jobs",
			sc.jobs, sc.jobs, live, attempts, succeeded, sc.job, distinct, failedJobs)
	}
	return nil
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
	var fnRows [][]any
	for rows.Next() {
		var name string
		var calls int64
		var total, self float64
		if err := rows.Scan(&name, &calls, &total, &self); err != nil {
			return err
		}
		fnRows = append(fnRows, []any{name, calls, total, self})
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
		FROM pg_stat_user_tables WHERE schemaname = 'pgq' AND relname IN ('jobs', 'attempts') ORDER BY relname`)
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

func printSummary(o options, scenarios []scenario, results map[string][]result) {
	fmt.Printf("\nsummary (%d run(s) per scenario; jobs/s = backlog / drain time)\n", o.runs)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tjobs\tok runs\tdrain median\tmin\tmax\tinsert median\tmin\tmax\tother cores max\t")
	var md bytes.Buffer
	md.WriteString("| scenario | jobs | ok runs | drain jobs/s median | min | max | insert jobs/s median | min | max | other cores, max |\n")
	md.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range scenarios {
		rs := results[sc.name]
		var drains, inserts []float64
		other := 0.0
		for _, r := range rs {
			other = max(other, r.otherCores)
			if r.err == nil {
				drains = append(drains, r.drainRate())
			}
			if r.insert > 0 {
				inserts = append(inserts, r.insertRate())
			}
		}
		ok := fmt.Sprintf("%d/%d", len(drains), len(rs))
		dm, dmin, dmax := stats(drains)
		im, imin, imax := stats(inserts)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t\n", sc.label, sc.jobs, ok,
			num(dm), num(dmin), num(dmax), num(im), num(imin), num(imax), other)
		fmt.Fprintf(&md, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %.2f |\n", sc.label, sc.jobs, ok,
			num(dm), num(dmin), num(dmax), num(im), num(imin), num(imax), other)
	}
	tw.Flush()
	if o.markdownOut {
		fmt.Println()
		fmt.Print(md.String())
	}
}

func num(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// stats returns median, min and max of vs, or -1s when vs is empty.
func stats(vs []float64) (median, lo, hi float64) {
	if len(vs) == 0 {
		return -1, -1, -1
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
}

// selfCPU is the user+system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the first line of /proc/stat: jiffies busy and in total, all CPUs.
type machineCPU struct{ busy, total int64 }

func readMachineCPU() machineCPU {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return machineCPU{}
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return machineCPU{}
	}
	var m machineCPU
	for i, s := range fields[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		m.total += v
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v
		}
	}
	return m
}

// busyCores is how many cores were busy on average between before and m.
func (m machineCPU) busyCores(before machineCPU) float64 {
	total := m.total - before.total
	if total <= 0 {
		return 0
	}
	return float64(m.busy-before.busy) / float64(total) * float64(runtime.NumCPU())
}

// logCounter counts the worker's log records (at Warn and above) and keeps the first.
type logCounter struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (l *logCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.lines) < 3 {
		l.lines = append(l.lines, strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *logCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logCounter) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "none"
	}
	return strings.Join(l.lines, " | ")
}

var _ io.Writer = (*logCounter)(nil)
