package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The starvation scenario: one key with a backlog of -starv-big jobs dispatched in bulk
// before the workers start, and -starv-keys small keys dispatching one job a second each
// while the big key drains; pgq with the queue fair by the key (S115) and plain, River
// (which has no fairness) on the same workload. Each run reports the p99 wait (dispatch
// commit to handler start) of the small keys' jobs started while the big key drained,
// and the drain rate (every job started, big and small, per second until the big key's
// last job started).

// starvArgs is the payload of a starvation job: seq as the other live scenarios'
// (seqArgs and riverSeqArgs read it), and the key.
type starvArgs struct {
	Seq    int64  `json:"seq"`
	Tenant string `json:"tenant"`
}

// Kind makes starvArgs a River job of the live scenarios' kind.
func (starvArgs) Kind() string { return "seq" }

// starvSystem is a live system that can run the starvation workload.
type starvSystem interface {
	liveSystem
	// prepare empties the queue and defines it fair by tenant or plain.
	prepare(ctx context.Context, fair bool) error
	// dispatchStarv queues the jobs in one call: one Dispatch for one job, the
	// system's bulk insert for more.
	dispatchStarv(ctx context.Context, args []starvArgs) error
	// jobsTable is the table the backlog is stored in, analyzed before the drain.
	jobsTable() string
}

// starvProducers dispatch the small keys' jobs, each one at a time, so that a round
// trip per dispatch does not hold the offered rate below one job a second per key.
const starvProducers = 16

// runStarvation runs the scenario on a queue fair by tenant or plain.
func runStarvation(ctx context.Context, o options, sys starvSystem, fair bool) runOut {
	name := map[bool]string{true: "fair", false: "plain"}[fair]
	out := runOut{rows: []string{"starv-" + name + "-p99", "starv-" + name + "-rate"}}
	fail := func(err error) runOut { out.err = err; return out }
	if err := sys.prepare(ctx, fair); err != nil {
		return fail(err)
	}
	big, keys := o.starvBig, o.starvKeys
	total := big + keys*int(o.timeout.Seconds()+1)
	base := time.Now()
	committed := make([]atomic.Int64, total) // ns since base
	started := make([]atomic.Int64, total)
	rc := newRunCounter(total)

	// The big key's backlog, in bulk.
	bulkStart := time.Now()
	for first := 0; first < big; first += 10000 {
		args := make([]starvArgs, 0, 10000)
		for i := first; i < min(big, first+10000); i++ {
			args = append(args, starvArgs{int64(i), "big"})
		}
		if err := sys.dispatchStarv(ctx, args); err != nil {
			return fail(fmt.Errorf("bulk: %w", err))
		}
	}
	bulkRate := float64(big) / time.Since(bulkStart).Seconds()
	note, err := prepare(ctx, o, sys.pool(), sys.jobsTable())
	if err != nil {
		return fail(err)
	}
	now := int64(time.Since(base))
	for i := range big {
		committed[i].Store(now)
	}

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
	drainStart := time.Since(base)

	// The small keys: each dispatches one job a second, spread evenly over the second
	// and over the producers.
	var halt atomic.Bool
	var next atomic.Int64
	next.Store(int64(big))
	perr := make(chan error, starvProducers)
	var pwg sync.WaitGroup
	for range starvProducers {
		pwg.Go(func() {
			tick := time.NewTicker(max(time.Second*starvProducers/time.Duration(keys), time.Millisecond))
			defer tick.Stop()
			for !halt.Load() {
				<-tick.C
				seq := next.Add(1) - 1
				if seq >= int64(total) {
					return
				}
				if err := sys.dispatchStarv(ctx, []starvArgs{{seq, fmt.Sprint("k", (seq-int64(big))%int64(keys))}}); err != nil {
					perr <- err
					return
				}
				committed[seq].Store(int64(time.Since(base)))
			}
		})
	}
	// Until the big key's last job started.
	deadline := time.Now().Add(o.timeout)
	bigDone := func() bool {
		for i := big - 1; i >= 0; i-- {
			if started[i].Load() == 0 {
				return false
			}
		}
		return true
	}
	for !bigDone() {
		if time.Now().After(deadline) {
			halt.Store(true)
			pwg.Wait()
			return fail(errors.New("starvation: the big key did not drain in -timeout"))
		}
		select {
		case err := <-perr:
			halt.Store(true)
			return fail(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var lastBig int64
	for i := range big {
		lastBig = max(lastBig, started[i].Load())
	}
	halt.Store(true)
	pwg.Wait()
	dispatched := min(next.Load(), int64(total))
	// Let the small jobs dispatched last start, then stop and verify.
	for time.Now().Before(deadline) && rc.handled.Load() < dispatched {
		time.Sleep(20 * time.Millisecond)
	}
	stopped = true
	if _, err := stop(); err != nil {
		return fail(err)
	}
	if err := rc.check(dispatched); err != nil {
		return fail(err)
	}
	var waits []float64
	startedInDrain := 0
	for i := int64(big); i < dispatched; i++ {
		if s := started[i].Load(); s <= lastBig {
			waits = append(waits, float64(s-committed[i].Load())/1e6)
		}
	}
	for i := range dispatched {
		if s := started[i].Load(); s <= lastBig {
			startedInDrain++
		}
	}
	if len(waits) == 0 {
		return fail(errors.New("starvation: no small job started while the big key drained"))
	}
	slices.Sort(waits)
	p99 := percentile(waits, 99)
	rate := float64(startedInDrain) / (time.Duration(lastBig) - drainStart).Seconds()
	out.add("starv-"+name+"-p99", p99)
	out.add("starv-"+name+"-rate", rate)
	out.add("starv-"+name+"-bulk", bulkRate)
	out.line = fmt.Sprintf("%s: %d big jobs (bulk %.0f jobs/s) and %d keys at 1/s: %d small jobs started in the drain, p50 %.1f ms, p99 %.1f ms, max %.1f ms; drain %.0f jobs/s | %s",
		name, big, bulkRate, keys, len(waits), percentile(waits, 50), p99, waits[len(waits)-1], rate, note)
	return out
}

// starvRiverWorkers is River's MaxWorkers in the starvation scenario: pgq's concurrency.
func starvRiverWorkers(o options) int {
	if o.starvConc > 0 {
		return o.starvConc
	}
	return 100 // pgq's default concurrency
}
