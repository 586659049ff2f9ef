package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// rowDef is one row of the summary table.
type rowDef struct {
	id          string
	label       string
	lowerBetter bool // latency: a ratio below 1 favours pgq
	decimals    int
}

// tally collects the figures of every run for the summary table.
type tally struct {
	rows    []rowDef
	vals    map[string]map[string][]float64 // row, system → figures of passing runs
	fails   map[string]map[string]int       // row, system → failed runs
	other   map[string]float64              // system → most cores used by other processes in a timed phase
	skipped map[string]string               // system → why it did not run
}

func newTally() *tally {
	return &tally{vals: map[string]map[string][]float64{}, fails: map[string]map[string]int{},
		other: map[string]float64{}, skipped: map[string]string{}}
}

func (t *tally) define(id, label string, lowerBetter bool, decimals int) {
	for _, r := range t.rows {
		if r.id == id {
			return
		}
	}
	t.rows = append(t.rows, rowDef{id: id, label: label, lowerBetter: lowerBetter, decimals: decimals})
	t.vals[id] = map[string][]float64{}
	t.fails[id] = map[string]int{}
}

func (t *tally) add(row, system string, v float64) {
	if m, ok := t.vals[row]; ok {
		m[system] = append(m[system], v)
	}
}

func (t *tally) fail(row, system string) {
	if m, ok := t.fails[row]; ok {
		m[system]++
	}
}

func (t *tally) noteOther(system string, cores float64) {
	t.other[system] = max(t.other[system], cores)
}

// cell formats "median [min–max]" of a row's figures for one system.
func (t *tally) cell(r rowDef, system string) string {
	vs, fails := t.vals[r.id][system], t.fails[r.id][system]
	if len(vs) == 0 && fails == 0 {
		if s, ok := t.skipped[system]; ok && (r.id == "drain" || r.id == "drain-insert") {
			return "skipped: " + s
		}
		return "–"
	}
	if len(vs) == 0 {
		return fmt.Sprintf("FAILED (%d/%d runs)", fails, fails)
	}
	med, lo, hi := stats(vs)
	s := fmt.Sprintf("%s [%s–%s]", fmtNum(med, r.decimals), fmtNum(lo, r.decimals), fmtNum(hi, r.decimals))
	if fails > 0 {
		s += fmt.Sprintf(" (%d of %d runs FAILED)", fails, fails+len(vs))
	}
	return s
}

// ratio is median pgq / median other, or "–".
func (t *tally) ratio(r rowDef, other string) string {
	p, q := t.vals[r.id]["pgq"], t.vals[r.id][other]
	if len(p) == 0 || len(q) == 0 {
		return "–"
	}
	mp, _, _ := stats(p)
	mq, _, _ := stats(q)
	if mq == 0 {
		return "–"
	}
	return strconv.FormatFloat(mp/mq, 'f', 2, 64)
}

func fmtNum(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

func (t *tally) print(o options, ge *graphileEnv) {
	fmt.Printf("\n## Results\n\n")
	fmt.Printf("%d run(s) per figure: median [min–max]. Rates are jobs/s (higher is better); latencies are ms (lower is better), so for them a pgq/River ratio below 1 favours pgq.\n\n", o.runs)
	fmt.Println("| scenario | pgq (median [min–max]) | River | graphile | pgq/River | pgq/graphile |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range t.rows {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.label, t.cell(r, "pgq"), t.cell(r, "river"),
			t.cell(r, "graphile"), t.ratio(r, "river"), t.ratio(r, "graphile"))
	}
	fmt.Println()
	var others []string
	for _, s := range []string{"pgq", "river", "graphile"} {
		if v, ok := t.other[s]; ok {
			others = append(others, fmt.Sprintf("%s runs %.2f", s, v))
		}
	}
	if len(others) > 0 {
		fmt.Printf("Most cores used by other processes during a timed phase: %s (of %d).\n\n", strings.Join(others, ", "), runtime.NumCPU())
	}
	fmt.Println("Settings:")
	for _, s := range settingsNotes(o, ge) {
		fmt.Println("- " + s)
	}
}

// settingsNotes describes what each figure used.
func settingsNotes(o options, ge *graphileEnv) []string {
	quiet := "no wait for a quiet machine"
	if o.quietCores > 0 {
		quiet = fmt.Sprintf("before each timed phase the benchmark waited (up to %s) until other processes used < %.2f cores", o.quietMax, o.quietCores)
	}
	n := []string{
		fmt.Sprintf("All systems on one PostgreSQL, each in its own fresh database (%s, %s, %s); before each timed phase: ANALYZE of the jobs table=%v, CHECKPOINT=%v, %s. Runs of the systems alternate within each scenario.",
			o.dbName, o.riverDB, o.graphileDB, o.analyze, o.checkpoint, quiet),
		fmt.Sprintf("Worker pools: %d connections max for each system (pgq worker pool, River's pgxpool, graphile maxPoolSize). Dispatch/insert goes through a separate pool.", o.poolSize),
		loadMinNote(o.pgqLoadMin),
		fmt.Sprintf("pgq: worker.New(pool, WithConcurrency(%d), WithStopWhenEmpty()) for drain, plain, retry and mw-*; drain time is worker.Run from start to its stop once the queue is empty and every completion is committed. Backlog inserted with Client.DispatchMany, %d per call. Other worker options at their defaults (tries 1, timeout 60 s, sleep 3 s, fetch cooldown 5 ms, vacuum of pgq.jobs after 10,000 dead rows). The worker pool is a plain pgxpool, as an embedding application would open it (the worker registers its binary uuid codec on its own reserve and completion connections).",
			o.conc, o.batch),
		fmt.Sprintf("River %s tuned for throughput (drain, steady, latency tuned): FetchCooldown %s, FetchPollInterval %s, Queues{default: MaxWorkers %d} (%d in latency), other Config fields at defaults; river_job vacuumed by the benchmark after %d dead rows, checked each second, as pgq's worker vacuums pgq.jobs (autovacuum is off on this server); drain time is from Client.Start until every job is `completed` in river_job (polled every 2 ms once the handlers have run). Backlog inserted with InsertManyFast, %d per call.",
			riverVersion, o.riverFetchCooldown, riverPoll(o), o.conc, o.riverLatencyConc, o.riverVacuumAfter, o.batch),
		fmt.Sprintf("River at defaults (latency): FetchCooldown 100ms, FetchPollInterval 1s, MaxWorkers %d.", o.riverLatencyConc),
	}
	if ge != nil {
		if ge.skip != "" {
			n = append(n, "graphile-worker: skipped ("+ge.skip+").")
		} else {
			n = append(n, fmt.Sprintf("graphile-worker %s on Node %s (drain only): runOnce with concurrency %d, maxPoolSize %d, preset.worker.localQueue.size %d, completeJobBatchDelay %d, failJobBatchDelay %d; drain time is runOnce from call to return (queue empty, batched completions flushed), in the Node process. Backlog inserted with WorkerUtils.addJobs (graphile_worker.add_jobs), %d per call.",
				ge.version, ge.nodeVersion, o.graphileConc, o.poolSize, o.graphileLocalQueue, o.graphileBatchDelay, o.graphileBatchDelay, o.batch))
		}
	}
	n = append(n,
		fmt.Sprintf("steady: %d producer goroutines, %d jobs per call (pgq Dispatch/DispatchMany, River Insert/InsertMany), pausing while %d dispatched jobs have not started; %s warm-up, then completed jobs (pgq.attempts succeeded, river_job completed) counted over %s. Leftovers drained and verified after the window. steady-small: the same with %d jobs per call, where each system's producers, waiting on their own WAL flushes, set the rate.",
			o.steadyProducers, o.steadyBatch, o.steadyBacklog, o.steadyWarmup, o.steadyDur, o.steadySmall),
		fmt.Sprintf("latency: one job per Dispatch/Insert call at %d/s for %s after %s idle; latency = handler start − return of the committing call, both in this process. pgq at worker defaults (concurrency 100, LISTEN/NOTIFY wake-up).",
			o.latencyRate, o.latencyDur, o.latencyIdle),
		fmt.Sprintf("bulk: %d jobs into an empty table, %d per call, no worker running; pgq DispatchMany vs River InsertMany and InsertManyFast.", o.jobs, o.batch),
		fmt.Sprintf("pgq only: drain-sql (%d jobs, SQL handler bench.noop(jsonb), worker default concurrency, SQL handlers bounded by the %d-connection pool); plain (no-op Go handler, the reference); retry (fails on attempt 1, succeeds on attempt 2: WithTries(2), backoff 0); mw-overlap (WithoutOverlapping by a per-job payload key, never contended); mw-ratelimit (RateLimited on a limit of 1e9 per hour); mw-throttle (ThrottlesExceptions, defaults, no exceptions); %d jobs each at concurrency %d.",
			o.sqlJobs, o.poolSize, o.extraJobs, o.conc),
	)
	return n
}

func riverPoll(o options) string {
	if o.riverFetchPoll == 0 {
		return "1s (default)"
	}
	return o.riverFetchPoll.String()
}

// loadMinNote says which pgq dispatches were kept as loads (S85).
func loadMinNote(min int) string {
	switch {
	case min < 0:
		return "pgq.load_min not set: pgq's default, dispatches of 1,000 jobs or more kept as loads (S85)."
	case min == 0:
		return "pgq.load_min 0: no loads, every job a row of pgq.jobs (S85)."
	}
	return fmt.Sprintf("pgq.load_min %d: dispatches of %d jobs or more kept as loads (S85).", min, min)
}
