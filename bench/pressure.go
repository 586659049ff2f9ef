package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The pressure scenario: an open-loop producer offers -pressure-rate jobs/s
// to running workers through consecutive phases of -pressure-phase each:
//
//	clean      nothing else runs
//	idle-tx    one session holds a transaction id, idle in transaction, for the whole phase
//	readers    four REPEATABLE READ sessions scan the jobs table in a loop, each snapshot
//	           held for a second
//	high-load  the producer offers -pressure-high-factor times the rate
//	recovery   nothing else runs (named apart: it follows a phase that left a backlog)
//
// Each phase reports the offered and completed rate, the wait from the return of the
// committing dispatch call to the handler's start (p50, p99, of the jobs started in the
// phase), the backlog at its end, and the jobs table's dead tuples and size. With
// -pressure-preload the first phase starts with a backlog dispatched before the workers:
// the drain of a clean table with the producer running, for a recovery to compare with.
var pressurePhases = []string{"clean", "idle-tx", "readers", "high-load", "recovery"}

// pressureTable is the jobs table of a system, whose dead tuples and size are reported.
func pressureTable(sys liveSystem) string {
	if sys.name() == "river" {
		return "river_job"
	}
	return "pgq.jobs"
}

type phaseResult struct {
	name              string
	offered, done     float64 // jobs/s
	p50, p99          float64 // ms
	backlog           int64
	dead              int64
	size              int64 // bytes, indexes and TOAST included, at the end of the phase
	largest           int64 // bytes: the most it held, sampled each second
	waitsSeen, starts int
	windows           []string // per 10 s of the phase: jobs started/s and their p99 wait
	// The whole windows that ended with a backlog of pressureBacklogged jobs or more, and
	// the rate jobs started in them: with work always waiting, the rate of the drain.
	backlogged, whole int
	drain             float64 // jobs/s
}

const (
	// pressureWindow is the length of the windows of a phase's tail report.
	pressureWindow = 10 * time.Second
	// pressureBacklogged is the backlog at a window's end from which the window counts
	// as draining: the workers were never short of work in it (more than one reserve
	// takes at -pressure-concurrency 100). The window in which a backlog runs out is
	// left out.
	pressureBacklogged = 1000
)

// runPressure runs the phases on one system and returns one figure per phase: the
// completed rate (row pressure-<phase>) and the p99 wait (row pressure-<phase>-p99).
func runPressure(ctx context.Context, o options, sys liveSystem) runOut {
	out := runOut{}
	for _, p := range o.pressurePhases {
		out.rows = append(out.rows, "pressure-"+p, "pressure-"+p+"-p99")
	}
	fail := func(err error) runOut { out.err = err; return out }
	if err := sys.reset(ctx); err != nil {
		return fail(err)
	}
	if _, err := prepare(ctx, o, sys.pool(), ""); err != nil {
		return fail(err)
	}
	total := int(float64(o.pressureRate)*(o.pressurePhase+o.pressureHold).Seconds()*float64(len(o.pressurePhases))*max(o.pressureHigh, 1)) + o.pressureRate + o.preload
	var rate atomic.Int64 // jobs/s offered now
	rate.Store(int64(o.pressureRate))
	base := time.Now()
	committed := make([]atomic.Int64, total) // ns since base; 0: not yet
	started := make([]atomic.Int64, total)
	rc := newRunCounter(total)
	var sent atomic.Int64
	// The preload: a backlog on a clean table, dispatched before any worker runs, whose
	// drain with the producer running is what a recovery after a burst compares with.
	// The producer goroutine starts after it, so it alone makes the first dispatch here.
	for first := 0; first < o.preload; first += 1000 {
		seqs := make([]int64, min(o.preload-first, 1000))
		for i := range seqs {
			seqs[i] = int64(first + i)
		}
		if err := sys.dispatch(ctx, seqs); err != nil {
			return fail(fmt.Errorf("preload: %w", err))
		}
		now := int64(time.Since(base))
		for _, s := range seqs {
			committed[s].Store(now)
		}
	}
	sent.Store(int64(o.preload))
	stop, err := sys.start(ctx, o, func(seq int64) {
		if seq >= 0 && seq < int64(total) {
			started[seq].CompareAndSwap(0, int64(time.Since(base)))
		}
		rc.ran(seq)
	})
	if err != nil {
		return fail(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = stop()
		}
	}()

	// The open-loop producer: every 5 ms it dispatches what the rate says is due since
	// the start, at most 500 jobs per call. It never waits for the workers.
	var halt atomic.Bool
	perr := make(chan error, 1)
	var pwg sync.WaitGroup
	pwg.Go(func() {
		last := time.Now()
		credit := 0.0 // jobs due and not yet dispatched
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for !halt.Load() {
			<-tick.C
			now := time.Now()
			credit += float64(rate.Load()) * now.Sub(last).Seconds()
			last = now
			due := int64(credit)
			credit -= float64(due)
			for due > 0 && !halt.Load() {
				n := min(due, 500)
				first := sent.Load()
				if first+n > int64(total) {
					perr <- fmt.Errorf("pressure: more than %d jobs due", total)
					return
				}
				seqs := make([]int64, n)
				for i := range seqs {
					seqs[i] = first + int64(i)
				}
				if err := sys.dispatch(ctx, seqs); err != nil {
					perr <- fmt.Errorf("dispatch: %w", err)
					return
				}
				now := int64(time.Since(base))
				for _, s := range seqs {
					committed[s].Store(now)
				}
				sent.Add(n)
				due -= n
			}
		}
	})
	stopProducer := func() error {
		halt.Store(true)
		pwg.Wait()
		select {
		case err := <-perr:
			return err
		default:
			return nil
		}
	}

	// The table's size, each second, for the largest it was in each phase and window.
	type sizeAt struct{ at, bytes int64 }
	var sizesMu sync.Mutex
	var sizes []sizeAt
	samplerDone := make(chan struct{})
	samplerCtx, stopSampler := context.WithCancel(ctx)
	go func() {
		defer close(samplerDone)
		every(samplerCtx, time.Second, func() {
			if b, err := tableBytes(samplerCtx, sys); err == nil {
				sizesMu.Lock()
				sizes = append(sizes, sizeAt{int64(time.Since(base)), b})
				sizesMu.Unlock()
			}
		})
	}()
	defer func() { stopSampler(); <-samplerDone }()
	// largestIn is the largest size sampled in [from, to) ns since base.
	largestIn := func(from, to int64) int64 {
		sizesMu.Lock()
		defer sizesMu.Unlock()
		var m int64
		for _, s := range sizes {
			if s.at >= from && s.at < to {
				m = max(m, s.bytes)
			}
		}
		return m
	}

	connConfig := sys.pool().Config().ConnConfig // the system's database, whatever the URL named
	var results []phaseResult
	for _, phase := range o.pressurePhases {
		c0, err := sys.completed(ctx)
		if err != nil {
			_ = stopProducer()
			return fail(err)
		}
		s0 := sent.Load()
		from := int64(time.Since(base))
		if phase == "high-load" {
			rate.Store(int64(float64(o.pressureRate) * o.pressureHigh))
		} else {
			rate.Store(int64(o.pressureRate))
		}
		endInterference, err := interfere(ctx, phase, connConfig, pressureTable(sys))
		if err != nil {
			_ = stopProducer()
			return fail(err)
		}
		time.Sleep(o.phaseLength(phase))
		to := int64(time.Since(base))
		c1, cerr := sys.completed(ctx)
		s1 := sent.Load()
		backlog := s1 - rc.handled.Load()
		var dead int64
		// Every partition of the table (pgq.jobs has four slots), or the table itself
		// (pg_partition_tree lists nothing for a table that is not partitioned).
		serr := sys.pool().QueryRow(ctx, `SELECT coalesce(sum(s.n_dead_tup), 0)::bigint FROM pg_stat_user_tables s
		    WHERE s.relid IN (SELECT t.relid FROM pg_partition_tree($1::regclass) t WHERE t.isleaf UNION SELECT $1::regclass)`,
			pressureTable(sys)).Scan(&dead)
		size, zerr := tableBytes(ctx, sys)
		ierr := endInterference()
		if err := errors.Join(cerr, serr, zerr, ierr); err != nil {
			_ = stopProducer()
			return fail(err)
		}
		secs := float64(to-from) / 1e9
		r := phaseResult{name: phase, offered: float64(s1-s0) / secs, done: float64(c1-c0) / secs,
			backlog: backlog, dead: dead, size: size, largest: max(largestIn(from, to), size)}
		var waits []float64
		for i := range int(s1) {
			st := started[i].Load()
			if st >= from && st < to {
				if cm := committed[i].Load(); cm > 0 {
					waits = append(waits, float64(st-cm)/1e6)
				}
			}
		}
		slices.Sort(waits)
		if len(waits) > 0 {
			r.p50, r.p99 = percentile(waits, 50), percentile(waits, 99)
		}
		byWindow := make([][]float64, int((to-from+int64(pressureWindow)-1)/int64(pressureWindow)))
		for i := range int(s1) {
			st, cm := started[i].Load(), committed[i].Load()
			if st >= from && st < to && cm > 0 {
				w := (st - from) / int64(pressureWindow)
				byWindow[w] = append(byWindow[w], float64(st-cm)/1e6)
			}
		}
		commits, starts := sortedTimes(committed[:s1]), sortedTimes(started[:s1])
		backlogAt := func(t int64) int { return upTo(commits, t) - upTo(starts, t) }
		drained := 0
		for w, ws := range byWindow {
			slices.Sort(ws)
			wfrom := from + int64(w)*int64(pressureWindow)
			r.windows = append(r.windows, fmt.Sprintf("%.0f/s p99 %.0f ms %.0f MB", float64(len(ws))/pressureWindow.Seconds(), percentile(ws, 99),
				float64(largestIn(wfrom, wfrom+int64(pressureWindow)))/1e6))
			if wend := wfrom + int64(pressureWindow); wend <= to {
				r.whole++
				if backlogAt(wend) >= pressureBacklogged {
					r.backlogged++
					drained += len(ws)
				}
			}
		}
		if r.backlogged > 0 {
			r.drain = float64(drained) / (float64(r.backlogged) * pressureWindow.Seconds())
		}
		results = append(results, r)
	}
	if err := stopProducer(); err != nil {
		return fail(err)
	}
	n := sent.Load()
	stopped = true
	warnings, err := finish(ctx, sys, rc, n, stop)
	var parts []string
	for _, r := range results {
		part := fmt.Sprintf("%s: offered %.0f/s, completed %.0f/s, wait p50 %.1f ms p99 %.1f ms, backlog %d, %s dead tuples %d, size %.1f MB (at most %.1f MB)",
			r.name, r.offered, r.done, r.p50, r.p99, r.backlog, pressureTable(sys), r.dead, float64(r.size)/1e6, float64(r.largest)/1e6)
		if r.backlogged > 0 {
			part += fmt.Sprintf(", draining at %.0f jobs/s (started in the %d of %d windows that ended with a backlog)", r.drain, r.backlogged, r.whole)
		}
		parts = append(parts, part)
		fmt.Fprintf(os.Stderr, "pressure %s %s, per %s: %s\n", sys.name(), r.name, pressureWindow, strings.Join(r.windows, " | "))
	}
	if o.preload > 0 {
		// The preload's drain rate: its jobs over the time from the first one's start
		// to the last one's.
		first, last := int64(math.MaxInt64), int64(0)
		for i := range o.preload {
			if st := started[i].Load(); st > 0 {
				first, last = min(first, st), max(last, st)
			}
		}
		if last > first {
			parts = append(parts, fmt.Sprintf("preload of %d drained at %.0f jobs/s", o.preload, float64(o.preload)/(float64(last-first)/1e9)))
		}
	}
	out.line = strings.Join(parts, " | ") + fmt.Sprintf(" | %d jobs in all | warnings logged %d", n, warnings)
	if err != nil {
		return fail(err)
	}
	for _, r := range results {
		out.add("pressure-"+r.name, r.done)
		out.add("pressure-"+r.name+"-p99", r.p99)
	}
	return out
}

// tableBytes is the size of a system's jobs table, indexes and TOAST included: every
// partition of it (pgq.jobs has four slots), or the table itself.
func tableBytes(ctx context.Context, sys liveSystem) (int64, error) {
	var n int64
	err := sys.pool().QueryRow(ctx, `SELECT coalesce((SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree($1::regclass) t
		    WHERE t.isleaf), pg_total_relation_size($1::regclass))::bigint`, pressureTable(sys)).Scan(&n)
	return n, err
}

// interfere starts what a phase puts next to the queue, on connections of its own to
// the system's database, and returns the function that ends it.
func interfere(ctx context.Context, phase string, cfg *pgx.ConnConfig, table string) (func() error, error) {
	switch phase {
	case "clean", "recovery", "high-load":
		return func() error { return nil }, nil
	case "idle-tx":
		// A forgotten BEGIN in psql: it has written nothing, but holds an xid, so no
		// vacuum may remove a row version that died after it began.
		c, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err != nil {
			return nil, err
		}
		if _, err := c.Exec(ctx, "BEGIN; SELECT pg_current_xact_id()"); err != nil {
			c.Close(ctx)
			return nil, err
		}
		return func() error {
			_, err := c.Exec(ctx, "ROLLBACK")
			return errors.Join(err, c.Close(ctx))
		}, nil
	case "readers":
		var halt atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			c, err := pgx.ConnectConfig(ctx, cfg.Copy())
			if err != nil {
				halt.Store(true)
				wg.Wait()
				return nil, err
			}
			wg.Go(func() {
				defer c.Close(context.WithoutCancel(ctx))
				for !halt.Load() {
					tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
					if err != nil {
						errs <- err
						return
					}
					for end := time.Now().Add(time.Second); time.Now().Before(end) && !halt.Load(); {
						var n int64
						if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
							_ = tx.Rollback(ctx)
							errs <- err
							return
						}
					}
					if err := tx.Commit(ctx); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		return func() error {
			halt.Store(true)
			wg.Wait()
			select {
			case err := <-errs:
				return err
			default:
				return nil
			}
		}, nil
	}
	return nil, fmt.Errorf("unknown pressure phase %q (use %s)", phase, strings.Join(pressurePhases, ", "))
}

// sortedTimes is the times set in ts (ns since base; 0: not yet), in order.
func sortedTimes(ts []atomic.Int64) []int64 {
	out := make([]int64, 0, len(ts))
	for i := range ts {
		if t := ts[i].Load(); t > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// upTo is how many of the sorted times are at or before t.
func upTo(sorted []int64, t int64) int {
	n, _ := slices.BinarySearch(sorted, t+1)
	return n
}
