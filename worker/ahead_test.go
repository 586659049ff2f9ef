package worker_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/worker"
)

// reservedAhead reads pgq_reserved_ahead_total{result} from a worker's registry.
func reservedAhead(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "pgq_reserved_ahead_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// S84: two workers of concurrency 5 drain a backlog of handlers that return at once,
// reserving ahead. Neither ever runs more than its 5 handlers, every job runs once,
// and the jobs reserved ahead started or went back.
func TestS84DrainReservesAheadWithinConcurrency(t *testing.T) {
	t.Parallel()
	const jobs, concurrency = 3000, 5
	b := setup(t)
	b.dispatchOrders(t, "ping", jobs)
	var mu sync.Mutex
	ran := map[int]int{}
	regs := make([]*prometheus.Registry, 2)
	most := make([]int, 2)
	var wg sync.WaitGroup
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
		w := b.worker(t, worker.WithConcurrency(concurrency), worker.WithStopWhenEmpty(), worker.WithMetrics(regs[i]))
		var now int
		worker.Handle(w, "ping", worker.Handler[order]{Run: func(_ context.Context, j *worker.Job[order]) error {
			mu.Lock()
			now++
			most[i] = max(most[i], now)
			ran[j.Args.OrderID]++
			mu.Unlock()
			runtime.Gosched() // let the worker's other handlers run meanwhile, if it started more
			mu.Lock()
			now--
			mu.Unlock()
			return nil
		}})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, w.Run(ctx))
		})
	}
	wg.Wait()
	require.Len(t, ran, jobs)
	for id, n := range ran {
		require.Equal(t, 1, n, "job %d", id)
	}
	var reserved, started, givenBack float64
	for i, reg := range regs {
		require.LessOrEqual(t, most[i], concurrency, "worker %d ran more handlers than its concurrency", i)
		reserved += reservedAhead(t, reg, "reserved")
		started += reservedAhead(t, reg, "started")
		givenBack += reservedAhead(t, reg, "given_back")
	}
	t.Logf("reserved ahead %.0f, started %.0f, given back %.0f", reserved, started, givenBack)
	require.Positive(t, reserved, "handlers that return at once are reserved ahead of")
	require.Equal(t, reserved, started+givenBack, "each job reserved ahead started or went back")
	require.Equal(t, jobs, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
}

// S84: two handlers that run far longer than a reserve's round trip are not reserved
// ahead of: no slot should free while a reserve is on its way (it would take a round
// trip of 200 ms for one to).
func TestS84NothingReservedAheadOfSlowHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.dispatchOrders(t, "ping", 8)
	reg := prometheus.NewRegistry()
	w := b.worker(t, worker.WithConcurrency(2), worker.WithStopWhenEmpty(), worker.WithMetrics(reg))
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error {
		time.Sleep(400 * time.Millisecond)
		return nil
	}})
	drain(t, w)
	require.Zero(t, reservedAhead(t, reg, "reserved"))
	require.Equal(t, 8, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
}

// S99, S84: a worker whose concurrency is its key's limit drains a backlog of that key
// without a job ever waiting for a place: a job that holds a place keeps its slot until
// its outcome commits (which frees the place), and none is reserved ahead of a place.
func TestS84S99LimitedBacklogNeverWaitsForAPlace(t *testing.T) {
	t.Parallel()
	const jobs, limit = 400, 5
	b := setup(t)
	b.db.Exec(t, `CREATE TABLE public.waits (job uuid);
		CREATE FUNCTION public.log_wait() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN INSERT INTO public.waits VALUES (NEW.uuid); RETURN NULL; END $$;
		CREATE TRIGGER log_wait AFTER UPDATE OF waits_on ON pgq.jobs
			FOR EACH ROW WHEN (NEW.waits_on IS NOT NULL) EXECUTE FUNCTION public.log_wait();
		SELECT pgq.define_concurrency('vendor', 5);
		SELECT pgq.define_job('ping', middleware => '[{"concurrency_limited": {"limit": "vendor"}}]');`)
	b.dispatchOrders(t, "ping", jobs)
	w := b.worker(t, worker.WithConcurrency(limit), worker.WithStopWhenEmpty())
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	drain(t, w)
	require.Equal(t, jobs, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM public.waits`), "no job waited for a place")
}
