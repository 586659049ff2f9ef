// Command bench measures pgq on a real PostgreSQL and compares it with River
// (github.com/riverqueue/river) and, for the backlog drain, graphile-worker, on the same
// server, the same work and the same concurrency. Each system gets its own database,
// created fresh. The scenarios are:
//
//	drain    1. drain a backlog of -jobs no-op jobs (insert timed apart)     pgq, River, graphile-worker
//	steady   2. producers dispatching and workers completing for -steady     pgq, River
//	steady-small  2b. the same with -steady-small-batch jobs per call         pgq, River
//	latency  3. dispatch commit → handler start, one job at a time, idle      pgq, River (defaults and tuned)
//	latency-sql  3c. the same for a SQL handler (its start read from its table)  pgq only
//	bulk     4. bulk dispatch of -jobs jobs from Go                           pgq, River (InsertMany, InsertManyFast)
//	bulk-shape  4c. one dispatch of 20,000 and of 200,000 1 KiB payloads: time per payload   pgq only
//	drain-sql, plain, retry, mw-overlap, mw-ratelimit, mw-throttle, mw-concurrency, mw-concurrency-off   pgq only: what the semantics cost
//	drain-go, drain-go-c50                                                    pgq only, the first benchmark's drains
//	batch                                                                     pgq only, drain-go's backlog as one batch
//	drain-sql-insert, pgbench-insert   pgq only: SQL handlers that insert a row, against pgbench's same INSERT
//	starvation  6. one key's bulk backlog and many keys at 1 job/s, fair and plain  pgq, River (plain)
//
// Every run is verified (each job ran exactly once and is recorded as done) and the
// program exits non-zero if any run fails verification. Each figure is the median of
// -runs runs with min and max; the output ends with a Markdown table of the figures,
// the pgq/River and pgq/graphile ratios, and the settings used.
//
//	go run . [-runs 3] [-jobs 100000] [-concurrency 1000] [-scenarios drain,steady,...]
//
// DATABASE_URL names the server (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); the benchmark drops and
// recreates bench_pgq, bench_river and bench_graphile (-db, -river-db, -graphile-db) on it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type options struct {
	adminURL   string
	dbName     string
	riverDB    string
	graphileDB string
	runs       int
	jobs       int
	sqlJobs    int
	extraJobs  int
	batch      int
	pgqLoadMin int
	starvBig   int
	starvKeys  int
	starvConc  int
	pgqOTel    bool
	conc       int
	highConc   int
	poolSize   int
	scenarios  []string
	systems    map[string]bool
	analyze    bool
	checkpoint bool
	timeout    time.Duration
	quietCores float64
	quietMax   time.Duration
	cpuProfile string
	fnStats    bool
	pgbench    string
	sqlGroup   time.Duration
	sqlGroups  int
	keepDB     bool

	steadyDur       time.Duration
	steadyWarmup    time.Duration
	steadyProducers int
	steadyBatch     int
	steadySmall     int
	steadyBacklog   int
	steadyMaxJobs   int

	latencyRate int
	latencyDur  time.Duration
	latencyIdle time.Duration

	pgqFetchCooldown time.Duration
	pgqVacuumAfter   int
	pgqSlotMB        int
	pgqLog           string

	riverFetchCooldown time.Duration
	riverVacuumAfter   int
	riverFetchPoll     time.Duration
	riverLatencyConc   int

	graphileDir        string
	graphileConc       int
	graphileLocalQueue int
	graphileBatchDelay int

	pressureRate   int
	pressurePhase  time.Duration
	pressureHold   time.Duration
	pressurePhases []string
	pressureConc   int
	pressureHigh   float64
	preload        int
}

var allScenarios = []string{"drain", "steady", "steady-small", "latency", "bulk", "bulk-shape", "drain-sql", "plain", "retry",
	"mw-overlap", "mw-ratelimit", "mw-throttle", "mw-concurrency", "mw-concurrency-off", "drain-go", "drain-go-c50", "batch", "pressure",
	"drain-sql-insert", "pgbench-insert", "latency-sql", "starvation"}

const defaultScenarios = "drain,steady,steady-small,latency,bulk,drain-sql,plain,retry,mw-overlap,mw-ratelimit,mw-throttle"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	var scen, systems string
	def := os.Getenv("DATABASE_URL")
	if def == "" {
		def = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	flag.StringVar(&o.adminURL, "url", def, "server to benchmark against, from $DATABASE_URL when set; the databases are created on it")
	flag.StringVar(&o.dbName, "db", "bench_pgq", "pgq's database (dropped, created and migrated)")
	flag.StringVar(&o.riverDB, "river-db", "bench_river", "River's database (dropped, created and migrated with rivermigrate)")
	flag.StringVar(&o.graphileDB, "graphile-db", "bench_graphile", "graphile-worker's database (dropped, created and migrated)")
	flag.IntVar(&o.runs, "runs", 3, "runs per scenario and system; figures are the median, min and max")
	flag.IntVar(&o.jobs, "jobs", 100000, "backlog size of drain, bulk, drain-go and drain-go-c50")
	flag.IntVar(&o.sqlJobs, "sql-jobs", 20000, "backlog size of drain-sql")
	flag.IntVar(&o.extraJobs, "extra-jobs", 20000, "backlog size of plain, retry and the mw-* scenarios")
	flag.IntVar(&o.pgqLoadMin, "pgq-load-min", -1, "pgq.load_min of pgq's sessions: dispatches of this many jobs or more are kept as loads (S85); 0: never; -1: pgq's default (1000)")
	flag.BoolVar(&o.pgqOTel, "pgq-otel", false, "pgq: trace and meter with the OpenTelemetry SDK (spans and metrics made, then dropped), to measure what tracing costs; without it no provider is given")
	flag.IntVar(&o.batch, "batch", 1000, "jobs per DispatchMany / InsertMany(Fast) / addJobs call when inserting a backlog")
	flag.IntVar(&o.conc, "concurrency", 1000, "handlers at once in drain, steady, plain, retry and mw-*: pgq WithConcurrency, River MaxWorkers, graphile concurrency")
	flag.IntVar(&o.highConc, "high-concurrency", 50, "concurrency of the drain-go-c50 scenario")
	flag.IntVar(&o.poolSize, "pool", 20, "max connections of each system's worker pool (pgq worker pool, River's pgxpool, graphile maxPoolSize)")
	flag.StringVar(&scen, "scenarios", defaultScenarios, "comma-separated scenarios to run, from "+strings.Join(allScenarios, ", "))
	flag.StringVar(&systems, "systems", "pgq,river,graphile", "comma-separated systems to run, from pgq, river, graphile")
	flag.BoolVar(&o.analyze, "analyze", true, "ANALYZE the jobs table after inserting a backlog (untimed)")
	flag.BoolVar(&o.checkpoint, "checkpoint", true, "CHECKPOINT before each timed phase (untimed)")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on a drain after this long")
	flag.Float64Var(&o.quietCores, "quiet-cores", 0.25, "before each timed phase, wait until other processes (PostgreSQL included) use fewer cores than this over 3 s; 0 does not wait")
	flag.DurationVar(&o.quietMax, "quiet-max", 5*time.Minute, "longest wait for a quiet machine before measuring anyway")
	flag.DurationVar(&o.pgqFetchCooldown, "pgq-fetch-cooldown", 5*time.Millisecond, "pgq worker: WithFetchCooldown (its default is 5ms), to measure what the setting buys")
	flag.IntVar(&o.pgqVacuumAfter, "pgq-vacuum-after", 10000, "pgq worker: WithVacuumAfter (its default is 10000; 0 leaves pgq.jobs to autovacuum), to measure what the setting buys")
	flag.IntVar(&o.pgqSlotMB, "pgq-slot-mb", 64, "pgq worker: WithSlotSize in MiB (its default is 64; 0 leaves the slots where they are), to measure what the size buys")
	flag.StringVar(&o.pgqLog, "pgq-log", "", "pressure: append the pgq worker's log at info level to this file (what its vacuum decided, for one)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the first pgq drain to this file")
	flag.DurationVar(&o.sqlGroup, "sql-group-budget", 5*time.Millisecond, "the pgq worker's WithSQLGroupBudget in the SQL drains (0: every SQL job alone)")
	flag.IntVar(&o.sqlGroups, "sql-groups", 4, "the pgq worker's WithSQLGroups in the SQL drains")
	flag.StringVar(&o.pgbench, "pgbench", "/usr/lib/postgresql/15/bin/pgbench", "pgbench binary of the pgbench-insert scenario")
	flag.BoolVar(&o.fnStats, "fnstats", false, "track_functions=all on the worker's connections and print pg_stat_user_functions, table statistics and transactions per job after the first pgq drain; it slows the drain a little")
	flag.BoolVar(&o.keepDB, "keep-db", true, "leave the benchmark databases in place at the end")

	flag.DurationVar(&o.steadyDur, "steady", 30*time.Second, "steady: measured window")
	flag.DurationVar(&o.steadyWarmup, "steady-warmup", 5*time.Second, "steady: producers and workers run this long before the window opens")
	flag.IntVar(&o.steadyProducers, "steady-producers", 2, "steady: producer goroutines")
	flag.IntVar(&o.steadyBatch, "steady-batch", 100, "steady: jobs per dispatch call (1: Dispatch / Insert; more: DispatchMany / InsertMany), enough that the producers outpace the workers")
	flag.IntVar(&o.steadySmall, "steady-small-batch", 10, "steady-small: jobs per dispatch call, few enough that the producers' commits are the limit")
	flag.IntVar(&o.steadyBacklog, "steady-backlog", 5000, "steady: producers pause while this many dispatched jobs have not started (keeps the queue non-empty but bounded)")
	flag.IntVar(&o.steadyMaxJobs, "steady-max-jobs", 5000000, "steady: producers stop after this many jobs in one run")

	flag.IntVar(&o.latencyRate, "latency-rate", 50, "latency: jobs dispatched per second, one per call")
	flag.DurationVar(&o.latencyDur, "latency-duration", 10*time.Second, "latency: how long to dispatch")
	flag.DurationVar(&o.latencyIdle, "latency-idle", 2*time.Second, "latency: workers idle this long before the first dispatch")

	flag.DurationVar(&o.riverFetchCooldown, "river-fetch-cooldown", 10*time.Millisecond, "River tuned: Config.FetchCooldown (River default 100ms)")
	flag.DurationVar(&o.riverFetchPoll, "river-fetch-poll", 0, "River tuned: Config.FetchPollInterval (0: River's default, 1s)")
	flag.IntVar(&o.riverVacuumAfter, "river-vacuum-after", 10000, "River: the benchmark vacuums river_job once a second when it has this many dead rows, as pgq's worker does for pgq.jobs (autovacuum is off on the benchmark server); 0 leaves it alone")
	flag.IntVar(&o.riverLatencyConc, "latency-concurrency", 100, "latency: MaxWorkers of River at defaults and tuned (pgq runs at its default concurrency, 100)")

	flag.StringVar(&o.graphileDir, "graphile-dir", "", "directory of the graphile-worker Node project (default: graphile or bench/graphile, whichever exists)")
	flag.IntVar(&o.graphileConc, "graphile-concurrency", 0, "graphile-worker concurrency (0: -concurrency)")
	flag.IntVar(&o.graphileLocalQueue, "graphile-local-queue", 0, "graphile-worker localQueue.size (0: concurrency + 1, as its docs recommend)")
	flag.IntVar(&o.graphileBatchDelay, "graphile-batch-delay", 0, "graphile-worker completeJobBatchDelay and failJobBatchDelay in ms (-1 disables batching)")
	flag.IntVar(&o.starvBig, "starv-big", 20000, "starvation: the big key's backlog, dispatched in bulk (the target's: 1,000,000)")
	flag.IntVar(&o.starvKeys, "starv-keys", 100, "starvation: small keys dispatching one job a second each (the target's: 1,000)")
	flag.IntVar(&o.starvConc, "starv-concurrency", 0, "starvation: pgq WithConcurrency and River MaxWorkers (0: pgq's default, 100)")
	flag.IntVar(&o.pressureRate, "pressure-rate", 5000, "pressure: jobs/s the open-loop producer offers")
	flag.DurationVar(&o.pressurePhase, "pressure-phase", 30*time.Second, "pressure: length of each phase")
	flag.DurationVar(&o.pressureHold, "pressure-hold", 0, "pressure: length of the idle-tx phase (the target's: 10m); 0: -pressure-phase")
	phases := flag.String("pressure-phases", strings.Join(pressurePhases, ","), "pressure: phases in order, from "+strings.Join(pressurePhases, ", "))
	flag.IntVar(&o.pressureConc, "pressure-concurrency", 100, "pressure: pgq WithConcurrency and River MaxWorkers (pgq's default is 100)")
	flag.Float64Var(&o.pressureHigh, "pressure-high-factor", 1.5, "pressure: the high-load phase offers this many times -pressure-rate (the burst target's: 1.5)")
	flag.IntVar(&o.preload, "pressure-preload", 0, "pressure: jobs dispatched before the workers start, a backlog on a clean table (the reference for a burst's recovery)")
	flag.Parse()

	for p := range strings.SplitSeq(*phases, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(pressurePhases, p) {
			return o, fmt.Errorf("unknown pressure phase %q (known: %s)", p, strings.Join(pressurePhases, ", "))
		}
		o.pressurePhases = append(o.pressurePhases, p)
	}
	if o.pressureHold == 0 {
		o.pressureHold = o.pressurePhase
	}
	if o.pressureRate < 1 || o.pressurePhase <= 0 || o.pressureHold < 0 || len(o.pressurePhases) == 0 || o.pressureConc < 1 || o.pressureHigh < 1 || o.preload < 0 {
		return o, errors.New("-pressure-rate, -pressure-concurrency and -pressure-high-factor must be >= 1, -pressure-phase > 0, -pressure-preload >= 0, -pressure-phases not empty")
	}

	for s := range strings.SplitSeq(scen, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return o, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ", "))
		}
		o.scenarios = append(o.scenarios, s)
	}
	o.systems = map[string]bool{}
	for s := range strings.SplitSeq(systems, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if s != "pgq" && s != "river" && s != "graphile" {
			return o, fmt.Errorf("unknown system %q (known: pgq, river, graphile)", s)
		}
		o.systems[s] = true
	}
	if o.graphileConc == 0 {
		o.graphileConc = o.conc
	}
	if o.graphileLocalQueue == 0 {
		o.graphileLocalQueue = o.graphileConc + 1
	}
	if o.runs < 1 || o.jobs < 1 || o.sqlJobs < 1 || o.extraJobs < 1 || o.batch < 1 || o.conc < 1 || o.highConc < 1 ||
		o.poolSize < 4 || o.steadyProducers < 1 || o.steadyBatch < 1 || o.steadySmall < 1 || o.steadyBacklog < 1 || o.latencyRate < 1 ||
		o.riverLatencyConc < 1 {
		return o, errors.New("-runs, -jobs, -sql-jobs, -extra-jobs, -batch, -concurrency, -high-concurrency, -steady-*, -latency-rate and -latency-concurrency must be >= 1, -pool >= 4")
	}
	return o, nil
}

func (o options) has(scenario string) bool { return slices.Contains(o.scenarios, scenario) }

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	ctx := context.Background()
	needRiver := o.systems["river"] && (o.has("drain") || o.has("steady") || o.has("steady-small") || o.has("latency") || o.has("bulk") || o.has("pressure") || o.has("starvation"))
	needPgq := o.systems["pgq"]
	needGraphile := o.systems["graphile"] && o.has("drain")

	t := newTally()
	failed := false

	var pe *pgqEnv
	if needPgq {
		if pe, err = setupPgq(ctx, o); err != nil {
			return err
		}
		defer pe.close(ctx, o)
	}
	var re *riverEnv
	if needRiver {
		if re, err = setupRiver(ctx, o); err != nil {
			return err
		}
		defer re.close(ctx, o)
	}
	var ge *graphileEnv
	if needGraphile {
		ge = setupGraphile(ctx, o)
		if ge.skip != "" {
			fmt.Printf("graphile-worker: skipped (%s)\n", ge.skip)
			t.skipped["graphile"] = ge.skip
		} else {
			defer ge.close(ctx, o)
		}
	}
	if err := printEnvironment(ctx, o); err != nil {
		return err
	}
	fmt.Printf("\nscenarios: %s; systems: %s; %d run(s) each\n\n", strings.Join(o.scenarios, ", "),
		strings.Join(slices.Sorted(func(yield func(string) bool) {
			for s := range o.systems {
				if !yield(s) {
					return
				}
			}
		}), ", "), o.runs)

	// record prints one run line and adds its figures to the summary.
	record := func(system, scen string, i int, out runOut) {
		status := "ok"
		if out.err != nil {
			status = "FAILED: " + out.err.Error()
			failed = true
			for _, f := range out.rows {
				t.fail(f, system)
			}
		} else {
			for _, f := range out.figs {
				t.add(f.row, system, f.value)
			}
		}
		t.noteOther(system, out.otherCores)
		fmt.Printf("%-13s %-9s run %d/%d: %s | %s\n", scen, system, i, o.runs, out.line, status)
	}

	// Rounds, not scenarios, outermost: each round runs every scenario once, so that the
	// ratio of two scenarios (a middleware drain against the plain one) compares runs a
	// minute apart, not the first scenario's runs with the last one's after the machine
	// has drifted.
	profiled := false
	for i := 1; i <= o.runs; i++ {
		for _, scen := range o.scenarios {
			switch scen {
			case "drain":
				t.define("drain", fmt.Sprintf("1. drain %d no-op jobs, jobs/s (concurrency %d)", o.jobs, o.conc), false, 0)
				t.define("drain-insert", fmt.Sprintf("1. insert of that backlog, jobs/s (%d per call)", o.batch), false, 0)
				if pe != nil {
					profile := !profiled && (o.cpuProfile != "" || o.fnStats)
					profiled = profiled || profile
					record("pgq", scen, i, pe.drain(ctx, o, pe.scenario(o, scen), profile))
				}
				if re != nil {
					record("river", scen, i, re.drain(ctx, o))
				}
				if ge != nil && ge.skip == "" {
					record("graphile", scen, i, ge.drain(ctx, o))
				}
			case "steady", "steady-small":
				so, label := o, "2. steady state %s, completed jobs/s"
				if scen == "steady-small" {
					so.steadyBatch, label = o.steadySmall, "2b. steady state %s, producer-bound, completed jobs/s"
				}
				t.define(scen, fmt.Sprintf(label+" (%d producers × %d jobs per call, concurrency %d)",
					o.steadyDur, o.steadyProducers, so.steadyBatch, o.conc), false, 0)
				if pe != nil {
					record("pgq", scen, i, runSteady(ctx, so, scen, pe.live(o.conc)))
				}
				if re != nil {
					record("river", scen, i, runSteady(ctx, so, scen, re.live(o, true, o.conc)))
				}
			case "latency":
				for _, p := range []string{"p50", "p95", "p99"} {
					t.define("lat-"+p, fmt.Sprintf("3. latency commit → handler start, %s ms (River defaults)", p), true, 1)
				}
				for _, p := range []string{"p50", "p95", "p99"} {
					t.define("lat-tuned-"+p, fmt.Sprintf("3. latency %s ms, River tuned (FetchCooldown %s)", p, o.riverFetchCooldown), true, 1)
				}
				if pe != nil {
					out := runLatency(ctx, o, pe.live(0))
					out.alsoAs("lat-", "lat-tuned-")
					record("pgq", scen, i, out)
				}
				if re != nil {
					record("river", scen, i, runLatency(ctx, o, re.live(o, false, o.riverLatencyConc)))
					out := runLatency(ctx, o, re.live(o, true, o.riverLatencyConc))
					out.rename("lat-", "lat-tuned-")
					record("river", scen+"-tuned", i, out)
				}
			case "pressure":
				for _, p := range o.pressurePhases {
					offered := o.pressureRate
					if p == "high-load" {
						offered = int(float64(o.pressureRate) * o.pressureHigh)
					}
					t.define("pressure-"+p, fmt.Sprintf("5. pressure, phase %s (%s): completed jobs/s, offered %d/s open-loop (concurrency %d)", p, o.phaseLength(p), offered, o.pressureConc), false, 0)
					t.define("pressure-"+p+"-p99", fmt.Sprintf("5. pressure, phase %s: p99 wait dispatch → start, ms", p), true, 1)
				}
				if pe != nil {
					record("pgq", scen, i, runPressure(ctx, o, pe.live(o.pressureConc)))
				}
				if re != nil {
					record("river", scen, i, runPressure(ctx, o, re.live(o, true, o.pressureConc)))
				}
			case "starvation":
				for _, name := range []string{"fair", "plain"} {
					t.define("starv-"+name+"-p99", fmt.Sprintf("6. starvation, queue %s: p99 wait of %d small keys' jobs (1/s each) while one key's bulk backlog of %d drains, ms", name, o.starvKeys, o.starvBig), true, 1)
					t.define("starv-"+name+"-rate", fmt.Sprintf("6. starvation, queue %s: jobs started/s while the big key drains", name), false, 0)
					t.define("starv-"+name+"-bulk", fmt.Sprintf("6. starvation, queue %s: bulk dispatch of the big key's backlog, jobs/s", name), false, 0)
				}
				if pe != nil {
					record("pgq", scen+"-fair", i, runStarvation(ctx, o, pe.live(o.starvConc), true))
					record("pgq", scen+"-plain", i, runStarvation(ctx, o, pe.live(o.starvConc), false))
				}
				if re != nil {
					record("river", scen+"-plain", i, runStarvation(ctx, o, re.live(o, true, starvRiverWorkers(o)), false))
				}
			case "bulk":
				t.define("bulk-many", fmt.Sprintf("4. bulk dispatch %d jobs, jobs/s (%d per call): River InsertMany", o.jobs, o.batch), false, 0)
				t.define("bulk-fast", fmt.Sprintf("4. bulk dispatch %d jobs, jobs/s (%d per call): River InsertManyFast", o.jobs, o.batch), false, 0)
				t.define("bulk-copy", fmt.Sprintf("4b. bulk dispatch %d jobs, jobs/s (%d per call): pgq DispatchMany ByCopy (COPY + pgq.dispatch_staged) against River InsertManyFast", o.jobs, o.batch), false, 0)
				if pe != nil {
					out := pe.bulk(ctx, o, false)
					out.alsoAs("bulk-many", "bulk-fast")
					record("pgq", scen, i, out)
					record("pgq", scen+"-copy", i, pe.bulk(ctx, o, true))
				}
				if re != nil {
					record("river", scen, i, re.bulk(ctx, o, false))
					out := re.bulk(ctx, o, true)
					out.alsoAs("bulk-fast", "bulk-copy")
					record("river", scen+"-fast", i, out)
				}
			case "bulk-shape":
				for _, kind := range []string{"many", "copy"} {
					api := map[string]string{"many": "DispatchMany", "copy": "DispatchMany ByCopy"}[kind]
					for _, n := range bulkShapeSizes {
						t.define(fmt.Sprintf("shape-%s-%d", kind, n), fmt.Sprintf("4c. one %s of %d 1 KiB payloads, µs per payload", api, n), true, 1)
					}
					t.define("shape-"+kind+"-ratio", fmt.Sprintf("4c. %s: µs per payload at %d over at %d (1: linear)", api,
						bulkShapeSizes[len(bulkShapeSizes)-1], bulkShapeSizes[0]), true, 2)
				}
				if pe != nil {
					record("pgq", scen, i, pe.bulkShape(ctx, o))
				}
			case "latency-sql":
				for _, p := range []string{"p50", "p95", "p99"} {
					t.define("lat-sql-"+p, fmt.Sprintf("3c. latency commit → SQL handler start, %s ms (pgq only, worker defaults)", p), true, 1)
				}
				if pe != nil {
					out := runLatency(ctx, o, pe.liveSQL())
					out.rename("lat-", "lat-sql-")
					record("pgq", scen, i, out)
				}
			case "pgbench-insert":
				t.define(scen, fmt.Sprintf("pgbench: the INSERT of drain-sql-insert, one transaction per row, %d clients (the worker's SQL connections), tps", max(1, o.poolSize-3)), false, 0)
				if pe != nil {
					record("pgq", scen, i, pe.pgbenchInsert(ctx, o))
				}
			default: // pgq-only drains
				if pe == nil {
					continue
				}
				sc := pe.scenario(o, scen)
				t.define(sc.row, sc.label, false, 0)
				profile := !profiled && (o.cpuProfile != "" || o.fnStats)
				profiled = profiled || profile
				record("pgq", scen, i, pe.drain(ctx, o, sc, profile))
			}
		}
	}

	t.print(o, ge)
	if failed {
		return errors.New("at least one run failed verification (see FAILED above)")
	}
	return nil
}

// figure is one number a run measured, for one row of the summary.
type figure struct {
	row   string
	value float64
}

// runOut is one run of one system in one scenario.
type runOut struct {
	figs       []figure
	rows       []string // the rows this run would have filled (marked failed on error)
	line       string   // details for the run line
	otherCores float64  // cores used by other processes during the timed phase
	err        error
}

func (r *runOut) add(row string, v float64) { r.figs = append(r.figs, figure{row, v}) }

// alsoAs copies every figure whose row starts with from to the same row starting with to.
func (r *runOut) alsoAs(from, to string) {
	for _, f := range r.figs {
		if strings.HasPrefix(f.row, from) {
			r.figs = append(r.figs, figure{to + strings.TrimPrefix(f.row, from), f.value})
		}
	}
	for _, row := range r.rows {
		if strings.HasPrefix(row, from) {
			r.rows = append(r.rows, to+strings.TrimPrefix(row, from))
		}
	}
}

// rename moves every figure whose row starts with from to the row starting with to.
func (r *runOut) rename(from, to string) {
	for i, f := range r.figs {
		if strings.HasPrefix(f.row, from) {
			r.figs[i].row = to + strings.TrimPrefix(f.row, from)
		}
	}
	for i, row := range r.rows {
		if strings.HasPrefix(row, from) {
			r.rows[i] = to + strings.TrimPrefix(row, from)
		}
	}
}

// createDatabase drops and recreates name and returns a pool config for it.
func createDatabase(ctx context.Context, o options, name string) (*pgxpool.Config, error) {
	admin, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", o.adminURL, err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return nil, fmt.Errorf("drop database %s: %w", name, err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	cfg, err := pgxpool.ParseConfig(o.adminURL)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Database = name
	cfg.MaxConns = int32(max(4, o.steadyProducers+2))
	return cfg, nil
}

func dropDatabase(ctx context.Context, o options, name string) error {
	admin, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

func printEnvironment(ctx context.Context, o options) error {
	conn, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		return err
	}
	fmt.Println("PostgreSQL:", version)
	fmt.Printf("Go: %s %s/%s, GOMAXPROCS %d, NumCPU %d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.GOMAXPROCS(0), runtime.NumCPU())
	rows, err := conn.Query(ctx, `SELECT name, setting || coalesce(' ' || unit, '')
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

// prepare runs the untimed steps before a timed phase: ANALYZE of table (when not
// empty), CHECKPOINT and the wait for a quiet machine. It returns a note for the run line.
func prepare(ctx context.Context, o options, pool *pgxpool.Pool, table string) (string, error) {
	if o.analyze && table != "" {
		if _, err := pool.Exec(ctx, "ANALYZE "+table); err != nil {
			return "", fmt.Errorf("analyze: %w", err)
		}
	}
	if o.checkpoint {
		if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	if o.quietCores <= 0 {
		return "", nil
	}
	waited, gaveUp := waitQuiet(o.quietCores, o.quietMax)
	return fmt.Sprintf("waited %s for quiet%s", waited.Round(time.Second), notQuiet(gaveUp)), nil
}

// phaseLength is how long the pressure phase runs.
func (o options) phaseLength(phase string) time.Duration {
	if phase == "idle-tx" {
		return o.pressureHold
	}
	return o.pressurePhase
}
