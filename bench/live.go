package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// liveSystem is a queue with running workers, for the steady and latency scenarios.
// Jobs carry a sequence number; the handler reports it to onRun.
type liveSystem interface {
	name() string
	pool() *pgxpool.Pool // for WAL, ANALYZE and CHECKPOINT
	reset(ctx context.Context) error
	// start starts the workers; stop stops them and returns the warnings they logged.
	start(ctx context.Context, o options, onRun func(seq int64)) (stop func() (int, error), err error)
	// dispatch queues one job per seq in one call (one transaction).
	dispatch(ctx context.Context, seqs []int64) error
	// completed counts the jobs recorded as completed in the database.
	completed(ctx context.Context) (int64, error)
	// verifyDone checks that jobs 0..n-1 each completed exactly once.
	verifyDone(ctx context.Context, n int64) error
}

// runCounter records how often the handler ran each job.
type runCounter struct {
	runs    []atomic.Int32
	handled atomic.Int64
	over    atomic.Int64 // sequence numbers out of range
}

func newRunCounter(n int) *runCounter { return &runCounter{runs: make([]atomic.Int32, n)} }

func (c *runCounter) ran(seq int64) {
	if seq >= 0 && seq < int64(len(c.runs)) {
		c.runs[seq].Add(1)
	} else {
		c.over.Add(1)
	}
	c.handled.Add(1)
}

// check reports jobs 0..n-1 that did not run exactly once.
func (c *runCounter) check(n int64) error {
	if c.over.Load() > 0 {
		return fmt.Errorf("verify: handler saw %d unknown sequence numbers", c.over.Load())
	}
	var never, twice int
	for i := range n {
		switch v := c.runs[i].Load(); {
		case v == 0:
			never++
		case v > 1:
			twice++
		}
	}
	if never > 0 || twice > 0 || c.handled.Load() != n {
		return fmt.Errorf("verify: of %d jobs dispatched, %d never ran and %d ran more than once (%d handler calls)",
			n, never, twice, c.handled.Load())
	}
	return nil
}

// finish waits until every one of n dispatched jobs has run and is completed in the
// database, then stops the workers and verifies the run.
func finish(ctx context.Context, sys liveSystem, rc *runCounter, n int64, stop func() (int, error)) (int, error) {
	err := waitFor(ctx, 2*time.Minute, 5*time.Millisecond, "every dispatched job to run", func() (bool, error) {
		return rc.handled.Load() >= n, nil
	})
	if err == nil {
		err = waitFor(ctx, 2*time.Minute, 20*time.Millisecond, "every job to be completed in the database", func() (bool, error) {
			c, err := sys.completed(ctx)
			return c >= n, err
		})
	}
	warnings, serr := stop()
	if err != nil {
		return warnings, err
	}
	if serr != nil {
		return warnings, serr
	}
	if err := rc.check(n); err != nil {
		return warnings, err
	}
	return warnings, sys.verifyDone(ctx, n)
}

// runSteady measures completed jobs/s while producers keep dispatching.
func runSteady(ctx context.Context, o options, row string, sys liveSystem) runOut {
	out := runOut{rows: []string{row}}
	fail := func(err error) runOut { out.err = err; return out }
	if err := sys.reset(ctx); err != nil {
		return fail(err)
	}
	note, err := prepare(ctx, o, sys.pool(), "")
	if err != nil {
		return fail(err)
	}
	rc := newRunCounter(o.steadyMaxJobs)
	stop, err := sys.start(ctx, o, rc.ran)
	if err != nil {
		return fail(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = stop()
		}
	}()

	var next atomic.Int64 // sequence numbers handed out; all committed once the producers return
	var halt atomic.Bool
	var paused atomic.Int64 // producer time spent waiting on the backlog bound, ns
	var wg sync.WaitGroup
	errs := make(chan error, o.steadyProducers)
	for range o.steadyProducers {
		wg.Go(func() {
			seqs := make([]int64, o.steadyBatch)
			for !halt.Load() {
				if next.Load()-rc.handled.Load() >= int64(o.steadyBacklog) {
					t := time.Now()
					time.Sleep(200 * time.Microsecond)
					paused.Add(int64(time.Since(t)))
					continue
				}
				base := next.Add(int64(o.steadyBatch)) - int64(o.steadyBatch)
				if base+int64(o.steadyBatch) > int64(o.steadyMaxJobs) {
					next.Add(-int64(o.steadyBatch)) // not dispatched
					errs <- fmt.Errorf("reached -steady-max-jobs %d", o.steadyMaxJobs)
					return
				}
				for i := range seqs {
					seqs[i] = base + int64(i)
				}
				if err := sys.dispatch(ctx, seqs); err != nil {
					errs <- fmt.Errorf("dispatch: %w", err)
					return
				}
			}
		})
	}
	stopProducers := func() error {
		halt.Store(true)
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}

	time.Sleep(o.steadyWarmup)
	c0, err := sys.completed(ctx)
	if err != nil {
		_ = stopProducers()
		return fail(err)
	}
	d0, p0 := next.Load(), paused.Load()
	m, err := startMeter(ctx, sys.pool())
	if err != nil {
		_ = stopProducers()
		return fail(err)
	}
	time.Sleep(o.steadyDur)
	c1, err := sys.completed(ctx)
	d1, p1 := next.Load(), paused.Load()
	u, merr := m.stop(ctx)
	if perr := stopProducers(); perr != nil {
		return fail(perr)
	}
	if err != nil {
		return fail(err)
	}
	if merr != nil {
		return fail(merr)
	}
	total := next.Load()
	done := float64(c1-c0) / u.elapsed.Seconds()
	out.otherCores = u.otherCores
	out.line = fmt.Sprintf("%d completed in %s = %.0f jobs/s; dispatched %.0f jobs/s, producers held back by the backlog bound %.0f%% of the time; %d dispatched in all | %s",
		c1-c0, u.elapsed.Round(time.Millisecond), done, float64(d1-d0)/u.elapsed.Seconds(),
		100*float64(p1-p0)/float64(o.steadyProducers)/float64(u.elapsed), total, u.cores("bench", c1-c0))
	if note != "" {
		out.line += " | " + note
	}
	stopped = true
	warnings, err := finish(ctx, sys, rc, total, stop)
	out.line += fmt.Sprintf(" | warnings logged %d", warnings)
	if err != nil {
		return fail(err)
	}
	out.add(row, done)
	return out
}

// runLatency dispatches one job at a time at o.latencyRate to idle workers and measures
// from the return of the committing call to the handler's start.
func runLatency(ctx context.Context, o options, sys liveSystem) runOut {
	out := runOut{rows: []string{"lat-p50", "lat-p95", "lat-p99"}}
	fail := func(err error) runOut { out.err = err; return out }
	if err := sys.reset(ctx); err != nil {
		return fail(err)
	}
	n := int(float64(o.latencyRate) * o.latencyDur.Seconds())
	if n < 1 {
		return fail(errors.New("-latency-rate × -latency-duration is less than one job"))
	}
	note, err := prepare(ctx, o, sys.pool(), "")
	if err != nil {
		return fail(err)
	}
	base := time.Now()
	committed := make([]atomic.Int64, n)
	started := make([]atomic.Int64, n)
	rc := newRunCounter(n)
	stop, err := sys.start(ctx, o, func(seq int64) {
		if seq >= 0 && seq < int64(n) {
			started[seq].CompareAndSwap(0, int64(time.Since(base)))
		}
		rc.ran(seq)
	})
	if err != nil {
		return fail(err)
	}
	time.Sleep(o.latencyIdle)
	m, err := startMeter(ctx, sys.pool())
	if err != nil {
		_, _ = stop()
		return fail(err)
	}
	tick := time.NewTicker(time.Second / time.Duration(o.latencyRate))
	for i := range n {
		if err := sys.dispatch(ctx, []int64{int64(i)}); err != nil {
			tick.Stop()
			_, _ = stop()
			return fail(fmt.Errorf("dispatch: %w", err))
		}
		committed[i].Store(int64(time.Since(base)))
		if i < n-1 {
			<-tick.C
		}
	}
	tick.Stop()
	warnings, err := finish(ctx, sys, rc, int64(n), stop)
	u, merr := m.stop(ctx)
	if err != nil {
		return fail(err)
	}
	if merr != nil {
		return fail(merr)
	}
	if s, ok := sys.(interface {
		startTimes(context.Context) (map[int64]time.Time, error)
	}); ok { // a SQL handler's start, by its own clock on this machine
		at, err := s.startTimes(ctx)
		if err != nil {
			return fail(err)
		}
		for seq, t := range at {
			if seq >= 0 && seq < int64(n) {
				started[seq].Store(int64(t.Sub(base)))
			}
		}
	}
	lat := make([]float64, n)
	negative := 0
	for i := range n {
		lat[i] = float64(started[i].Load()-committed[i].Load()) / 1e6
		if lat[i] < 0 {
			negative++
		}
	}
	slices.Sort(lat)
	p50, p95, p99 := percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	out.otherCores = u.otherCores
	out.line = fmt.Sprintf("%d jobs at %d/s: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms", n, o.latencyRate,
		p50, p95, p99, lat[n-1])
	if negative > 0 {
		out.line += fmt.Sprintf(" (%d handler starts seen before the dispatch call returned)", negative)
	}
	out.line += " | " + u.cores("bench", 0)
	if note != "" {
		out.line += " | " + note
	}
	out.line += fmt.Sprintf(" | warnings logged %d", warnings)
	out.add("lat-p50", p50)
	out.add("lat-p95", p95)
	out.add("lat-p99", p99)
	return out
}
