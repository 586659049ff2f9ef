package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type bundle struct {
	db     *pgqtest.DB
	client *pgq.Client
}

func setup(t *testing.T) bundle {
	t.Helper()
	return setupWith(t, pgqtest.New(t))
}

// setupWith is setup on a database the test made.
func setupWith(t *testing.T, db *pgqtest.DB) bundle {
	t.Helper()
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	return bundle{db: db, client: client}
}

func (b bundle) worker(t *testing.T, opts ...worker.Option) *worker.Worker {
	t.Helper()
	w, err := worker.New(b.db.WorkerPool, append([]worker.Option{worker.WithLogger(quiet), worker.WithSleep(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return w
}

// start runs w in the background; the returned func stops it and returns Run's error.
func start(t *testing.T, w *worker.Worker) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("worker did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// drain runs w with WithStopWhenEmpty until it stops.
func drain(t *testing.T, w *worker.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Run(ctx))
}

func (b bundle) outcomes(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	return pgqtest.Scalar[[]string](t, b.db,
		`SELECT coalesce(array_agg(outcome ORDER BY id), '{}') FROM pgq.attempts WHERE job_uuid = $1`, id)
}

func (b bundle) failedException(t *testing.T, id uuid.UUID) string {
	t.Helper()
	return pgqtest.Scalar[string](t, b.db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, id)
}

type order struct {
	OrderID int `json:"order_id"`
}

// dispatchOrders dispatches n jobs named job with the payloads order{0} to order{n-1}.
func (b bundle) dispatchOrders(t *testing.T, job string, n int) {
	t.Helper()
	payloads := make([]any, n)
	for i := range payloads {
		payloads[i] = order{i}
	}
	_, err := b.client.DispatchMany(context.Background(), job, payloads)
	require.NoError(t, err)
}

// S6: the worker's --tries applies to jobs that set none (default 1).
func TestS6WorkerDefaultTries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []worker.Option
		tries int
	}{
		{"DefaultOne", nil, 1},
		{"WithTries3", []worker.Option{worker.WithTries(3)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var calls atomic.Int32
			w := b.worker(t, append(tc.opts, worker.WithStopWhenEmpty())...)
			worker.Handle(w, "flaky", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
				calls.Add(1)
				return errors.New("vendor 500")
			}})
			id, err := b.client.Dispatch(context.Background(), "flaky", order{OrderID: 1})
			require.NoError(t, err)
			drain(t, w)
			require.Equal(t, int32(tc.tries), calls.Load())
			require.Equal(t, "vendor 500", b.failedException(t, id))
		})
	}
}

// S11: a handler releasing its own job uses an attempt, counts no exception and waits
// the delay it chose.
func TestS11HandlerRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	w := b.worker(t, worker.WithStopWhenEmpty())
	worker.Handle(w, "poll", worker.Handler[json.RawMessage]{Run: func(ctx context.Context, j *worker.Job[json.RawMessage]) error {
		if calls.Add(1) == 1 {
			return worker.Release(30 * time.Second)
		}
		return nil
	}})
	id, err := b.client.Dispatch(context.Background(), "poll", nil, pgq.Tries(3), pgq.MaxExceptions(1))
	require.NoError(t, err)
	drain(t, w)
	require.Equal(t, []string{"released"}, b.outcomes(t, id))
	require.Equal(t, 30, pgqtest.Scalar[int](t, b.db, `SELECT delay FROM pgq.attempts WHERE job_uuid = $1`, id))
	require.Equal(t, 0, pgqtest.Scalar[int](t, b.db, `SELECT exceptions FROM pgq.jobs WHERE uuid = $1`, id))

	require.NoError(t, b.client.RunNow(context.Background(), id))
	drain(t, b.worker(t, worker.WithStopWhenEmpty()))
	// no handler registered on the second worker: proves run_now made it due, and the
	// missing handler is a clean failure (S33)
	require.Equal(t, []string{"released", "failed"}, b.outcomes(t, id))
}

// S13: a Go handler past its timeout is cancelled and the attempt recorded timed_out; a
// handler that ignores the cancellation stops the worker with ErrHandlerStuck and its job
// stays reserved (it comes back through its lease, never while it may still run).
func TestS13GoHandlerTimeout(t *testing.T) {
	t.Parallel()
	t.Run("Cancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := b.worker(t, worker.WithStopWhenEmpty(), worker.WithTries(2))
		var calls atomic.Int32
		var deadlines, errs [2]error // what the handler's context reported, per attempt
		worker.Handle(w, "slow", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
			n := calls.Add(1)
			if at, ok := ctx.Deadline(); !ok || time.Until(at) > time.Second || time.Until(at) < 500*time.Millisecond {
				deadlines[n-1] = fmt.Errorf("deadline %v (set: %v), want about a second from now", at, ok)
			}
			<-ctx.Done()
			errs[n-1] = ctx.Err()
			return ctx.Err()
		}})
		id, err := b.client.Dispatch(context.Background(), "slow", order{1}, pgq.Timeout(time.Second), pgq.MaxExceptions(1))
		require.NoError(t, err)
		drain(t, w)
		require.Equal(t, int32(2), calls.Load(), "a timeout is not an exception: max_exceptions 1 did not stop it")
		for i := range 2 {
			require.NoError(t, deadlines[i], "attempt %d", i+1)
			require.ErrorIs(t, errs[i], context.DeadlineExceeded, "attempt %d: the handler's context after its timeout", i+1)
		}
		require.Equal(t, []string{"timed_out", "timed_out"}, b.outcomes(t, id))
		require.Contains(t, b.failedException(t, id), "TimeoutExceeded: slow attempt 2 ran past its timeout")
	})
	t.Run("Stuck", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := b.worker(t, worker.WithTimeoutGrace(300*time.Millisecond))
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		worker.Handle(w, "stubborn", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
			<-release // ignores ctx
			return nil
		}})
		id, err := b.client.Dispatch(context.Background(), "stubborn", order{1}, pgq.Timeout(time.Second))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.ErrorIs(t, w.Run(ctx), worker.ErrHandlerStuck)
		require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.running WHERE uuid = $1`, id),
			"the job stays reserved until its lease ends")
		require.Empty(t, b.outcomes(t, id))
	})
}

// S17: the failed hook runs once, with the recorded exception and the typed arguments.
func TestS17FailedHookRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithStopWhenEmpty(), worker.WithTries(3))
	var hooks []string
	var mu sync.Mutex
	worker.Handle(w, "charge", worker.Handler[order]{
		Run: func(ctx context.Context, j *worker.Job[order]) error {
			return errors.New("card declined")
		},
		Failed: func(ctx context.Context, j *worker.Job[order], err error) {
			mu.Lock()
			defer mu.Unlock()
			hooks = append(hooks, err.Error())
			require.Equal(t, 42, j.Args.OrderID)
			require.Equal(t, 3, j.Attempt)
		},
	})
	_, err := b.client.Dispatch(context.Background(), "charge", order{OrderID: 42})
	require.NoError(t, err)
	drain(t, w)
	require.Equal(t, []string{"card declined"}, hooks)
}

// S31: an idle worker is woken by NOTIFY (its poll is a minute), and after its LISTEN
// connection is killed it reconnects and still starts new jobs.
func TestS31WakeUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := worker.New(b.db.WorkerPool, worker.WithLogger(quiet), worker.WithSleep(time.Minute))
	require.NoError(t, err)
	ran := make(chan int, 10)
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		ran <- j.Args.OrderID
		return nil
	}})
	stop := start(t, w)
	waitListening(t, b)

	_, err = b.client.Dispatch(context.Background(), "ping", order{1})
	require.NoError(t, err)
	select {
	case n := <-ran:
		require.Equal(t, 1, n)
	case <-time.After(10 * time.Second):
		t.Fatal("the idle worker was not woken by the notification")
	}

	b.db.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	              WHERE datname = current_database() AND query LIKE '-- name: ListenJobs%' AND pid <> pg_backend_pid()`)
	time.Sleep(100 * time.Millisecond)
	waitListening(t, b)
	_, err = b.client.Dispatch(context.Background(), "ping", order{2})
	require.NoError(t, err)
	select {
	case n := <-ran:
		require.Equal(t, 2, n)
	case <-time.After(10 * time.Second):
		t.Fatal("no job started after the listener reconnected")
	}
	require.NoError(t, stop())
}

// S31: no wake-up is lost while workers go from busy to napping and back. Two workers
// poll only once a minute, so every job must be found through a NOTIFY or the reserve
// that follows a nap; dispatchers commit at random moments, some holding their
// transaction open across a worker's nap.
func TestS31NoWakeUpLostBetweenBusyAndNapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const dispatchers, perDispatcher, total = 4, 60, 4*60 + 40
	ran := make(chan int, total)
	var stops []func() error
	for range 2 {
		w, err := worker.New(b.db.WorkerPool, worker.WithLogger(quiet), worker.WithSleep(time.Minute), worker.WithConcurrency(4))
		require.NoError(t, err)
		worker.Handle(w, "tick", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
			time.Sleep(time.Duration(j.Args.OrderID%4) * time.Millisecond)
			ran <- j.Args.OrderID
			return nil
		}})
		stops = append(stops, start(t, w))
	}
	listener, err := pgx.Connect(context.Background(), b.db.URL)
	require.NoError(t, err)
	defer listener.Close(context.Background())
	_, err = listener.Exec(context.Background(), "LISTEN pgq_jobs")
	require.NoError(t, err)

	var wg sync.WaitGroup
	for d := range dispatchers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(d), 1))
			for i := range perDispatcher {
				id := d*perDispatcher + i
				tx, err := b.db.Pool.Begin(context.Background())
				if !assert.NoError(t, err) {
					return
				}
				_, err = b.client.DispatchTx(context.Background(), tx, "tick", order{id})
				assert.NoError(t, err)
				if rnd.IntN(3) == 0 {
					time.Sleep(time.Duration(rnd.IntN(30)) * time.Millisecond) // open across a nap
				}
				assert.NoError(t, tx.Commit(context.Background()))
				time.Sleep(time.Duration(rnd.IntN(25)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	await := func(n int, within time.Duration, what string) {
		t.Helper()
		timeout := time.After(within)
		for len(seen) < n {
			select {
			case id := <-ran:
				require.False(t, seen[id], "job %d ran twice", id)
				seen[id] = true
			case <-timeout:
				t.Fatalf("%s: %d of %d jobs ran in %s (the poll is a minute): a wake-up was lost", what, len(seen), n, within)
			}
		}
	}
	await(dispatchers*perDispatcher, 45*time.Second, "concurrent dispatchers")

	// Then, on one worker (a second one napping would get every NOTIFY), one job at a
	// time, each dispatched just after the previous one ran (while the worker goes to
	// nap) and committed up to 40 ms later: across its nap.
	require.NoError(t, stops[1]())
	rnd := rand.New(rand.NewPCG(7, 7))
	for id := dispatchers * perDispatcher; id < total; id++ {
		tx, err := b.db.Pool.Begin(context.Background())
		require.NoError(t, err)
		_, err = b.client.DispatchTx(context.Background(), tx, "tick", order{id})
		require.NoError(t, err)
		time.Sleep(time.Duration(rnd.IntN(40)) * time.Millisecond)
		require.NoError(t, tx.Commit(context.Background()))
		await(id+1, 20*time.Second, fmt.Sprintf("job %d, committed across the workers' nap", id))
	}
	notified := 0
	for {
		wctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		notified++
	}
	t.Logf("%d jobs, %d NOTIFYs", total, notified)
	require.Positive(t, notified, "the workers napped between dispatches, so some dispatches notified")
	require.NoError(t, stops[0]())
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pg_locks l JOIN pg_database d ON d.oid = l.database
	    WHERE d.datname = current_database() AND l.locktype = 'advisory' AND l.objsubid = 2`),
		"a stopped worker leaves no nap lock on its pooled session")
}

func waitListening(t *testing.T, b bundle) {
	t.Helper()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pg_stat_activity
		    WHERE datname = current_database() AND query LIKE '-- name: ListenJobs%' AND pid <> pg_backend_pid()`) == 1
	}, 10*time.Second, 20*time.Millisecond)
}

// S32: a stop request lets running handlers finish within the grace; the rest are
// cancelled and released without delay, attempt refunded; Run returns nil and nothing
// is left reserved.
func TestS32GracefulStop(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithShutdownGrace(500*time.Millisecond))
	started := make(chan string, 2)
	worker.Handle(w, "quick", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- "quick"
		time.Sleep(200 * time.Millisecond)
		return nil
	}})
	worker.Handle(w, "long", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- "long"
		<-ctx.Done()
		return ctx.Err()
	}})
	quick, err := b.client.Dispatch(context.Background(), "quick", order{1})
	require.NoError(t, err)
	long, err := b.client.Dispatch(context.Background(), "long", order{2}, pgq.Tries(1))
	require.NoError(t, err)
	stop := start(t, w)
	<-started
	<-started
	require.NoError(t, stop())

	require.Equal(t, []string{"succeeded"}, b.outcomes(t, quick), "finished within the grace")
	require.Equal(t, []string{"released"}, b.outcomes(t, long))
	var attempts int
	var reserved bool
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		`SELECT attempts, reserved_at IS NOT NULL FROM pgq.jobs WHERE uuid = $1`, long).Scan(&attempts, &reserved))
	require.Equal(t, 0, attempts, "the interrupted attempt is refunded: tries 1 is not used up by a deploy")
	require.False(t, reserved)
	require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.ready WHERE uuid = $1`, long), "available at once")
}

// S33: an unknown job, a payload the handler cannot decode and a panic each fail their
// attempt with a clear exception, and the worker goes on serving.
func TestS33BadInputNeverKillsTheWorker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithStopWhenEmpty(), worker.WithConcurrency(1))
	worker.Handle(w, "typed", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		if j.Args.OrderID == 13 {
			panic("unlucky order")
		}
		return nil
	}})
	ctx := context.Background()
	unknown, err := b.client.Dispatch(ctx, "nobody_handles_this", nil)
	require.NoError(t, err)
	badPayload, err := b.client.Dispatch(ctx, "typed", json.RawMessage(`{"order_id": "not a number"}`))
	require.NoError(t, err)
	panics, err := b.client.Dispatch(ctx, "typed", order{13})
	require.NoError(t, err)
	good, err := b.client.Dispatch(ctx, "typed", order{14})
	require.NoError(t, err)
	drain(t, w)

	require.Contains(t, b.failedException(t, unknown), `no handler for job "nobody_handles_this"`)
	require.Contains(t, b.failedException(t, badPayload), "decode payload of typed into worker_test.order")
	require.Equal(t, "panic: unlucky order", b.failedException(t, panics))
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, good))
}

// S2 through the Go API: DispatchTx joins the caller's transaction.
func TestS2DispatchTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = b.client.DispatchTx(ctx, tx, "report", order{1})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`))

	tx, err = b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	ids, err := b.client.DispatchManyTx(ctx, tx, "report", []any{order{1}, order{2}})
	require.NoError(t, err)
	require.Len(t, ids, 2)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 2, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`))

	_, err = b.client.Dispatch(ctx, "report", nil, pgq.Backoff())
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "an empty backoff is rejected by PostgreSQL (S4)")
	_, err = b.client.Dispatch(ctx, "report", json.RawMessage(`{"broken"`))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
}

// S14 in process: a live worker heartbeats its job, so a second worker never gets it
// even though the job runs well past retry_after; at the shortest lease (1 s) too,
// which a heartbeat looked for once a second could not keep.
func TestS14HeartbeatKeepsTheLease(t *testing.T) {
	t.Parallel()
	for _, lease := range []time.Duration{time.Second, 2 * time.Second} {
		t.Run(lease.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			require.NoError(t, b.client.DefineQueue(ctx, "default", lease, false))
			var runs atomic.Int32
			handler := worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
				runs.Add(1)
				time.Sleep(5 * time.Second)
				return nil
			}}
			id, err := b.client.Dispatch(ctx, "long", order{1}, pgq.Tries(5))
			require.NoError(t, err)
			var stops []func() error
			for _, name := range []string{"one", "two"} {
				w := b.worker(t, worker.WithName(name))
				worker.Handle(w, "long", handler)
				stops = append(stops, start(t, w))
			}
			require.Eventually(t, func() bool { return len(b.outcomes(t, id)) > 0 }, 20*time.Second, 50*time.Millisecond)
			for _, stop := range stops {
				require.NoError(t, stop())
			}
			require.Equal(t, int32(1), runs.Load())
			require.Equal(t, []string{"succeeded"}, b.outcomes(t, id))
		})
	}
}

// S30 in process: --queue high,low with one slot takes every high job first.
func TestS30PriorityQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var order_ []string
	var mu sync.Mutex
	w := b.worker(t, worker.WithQueues("high", "low"), worker.WithConcurrency(1), worker.WithStopWhenEmpty())
	worker.Handle(w, "j", worker.Handler[string]{Run: func(ctx context.Context, j *worker.Job[string]) error {
		mu.Lock()
		defer mu.Unlock()
		order_ = append(order_, j.Args)
		return nil
	}})
	for _, q := range []string{"low", "high", "low", "high"} {
		_, err := b.client.Dispatch(ctx, "j", q, pgq.Queue(q))
		require.NoError(t, err)
	}
	drain(t, w)
	require.Equal(t, []string{"high", "high", "low", "low"}, order_)
}

// handleLocked registers a "locked" handler that says on started which order it runs,
// then waits for release, or for its cancellation, which it says on cancelled.
func handleLocked(w *worker.Worker) (started, cancelled chan int, release chan struct{}) {
	started, cancelled, release = make(chan int, 8), make(chan int, 8), make(chan struct{})
	worker.Handle(w, "locked", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- j.Args.OrderID
		select {
		case <-ctx.Done():
			cancelled <- j.Args.OrderID
			return ctx.Err()
		case <-release:
			return nil
		}
	}})
	return started, cancelled, release
}

// S26, S34: a without_overlapping job's key is a lease that its worker's heartbeat
// renews. When the worker's reserving session drops, the handler runs on and the key
// stays held (before, the key went with the session while the handler ran). When the
// worker cannot renew the lease for 3 s, it cancels the handler and gives the attempt
// back (S35): not counted, so tries 1 is not used up.
func TestS26S34S35OverlapLeaseOutlivesTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithShutdownGrace(300*time.Millisecond), worker.WithName("W"))
	started, cancelled, release := handleLocked(w)
	ctx := context.Background()
	first, err := b.client.Dispatch(ctx, "locked", order{1}, pgq.Tries(1), pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "ledger"}))
	require.NoError(t, err)
	_, err = b.client.Dispatch(ctx, "locked", order{2}, pgq.Tries(5), pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "ledger", ReleaseAfter: time.Second}))
	require.NoError(t, err)
	stop := start(t, w)
	require.Equal(t, 1, <-started)

	t.Run("S34/session_lost", func(t *testing.T) {
		// Every backend of the worker: its session (reserve, nap), its listener, the
		// connections of its heartbeats and reports.
		b.db.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		select {
		case id := <-cancelled:
			t.Fatalf("handler %d was cancelled when the session dropped", id)
		case id := <-started:
			t.Fatalf("job %d started while job 1 holds the key", id)
		case <-time.After(4 * time.Second):
		}
		require.Equal(t, "W", pgqtest.Scalar[string](t, b.db, `SELECT worker FROM pgq.locks WHERE kind = 'overlap' AND key = 'locked:ledger'`),
			"the lease is still held, and renewed")
	})
	t.Run("S34/lease_not_renewed", func(t *testing.T) {
		// Hold the job's row: heartbeats wait on it and time out, so the lease is not renewed.
		tx, err := b.db.Pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `SELECT FROM pgq.jobs WHERE uuid = $1 FOR UPDATE`, first)
		require.NoError(t, err)
		select {
		case id := <-cancelled:
			require.Equal(t, 1, id)
		case <-time.After(10 * time.Second):
			t.Fatal("the handler whose overlap lease could not be renewed was not cancelled")
		}
		require.NoError(t, tx.Rollback(ctx))
		require.Eventually(t, func() bool { return len(b.outcomes(t, first)) == 1 }, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, []string{"interrupted"}, b.outcomes(t, first))
		require.Contains(t, pgqtest.Scalar[string](t, b.db, `SELECT exception FROM pgq.attempts WHERE job_uuid = $1`, first),
			"could not renew the lease of this job's overlap key in time; attempt given back")
	})
	close(release)
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0
	}, 15*time.Second, 50*time.Millisecond, "both jobs ran, one at a time")
	require.Equal(t, []string{"interrupted", "succeeded"}, b.outcomes(t, first), "given back, not counted: tries 1 was not used up")
	require.NoError(t, stop())
}

// S27, S34: a lease whose keys each have an expire_after ends by it however often it is
// renewed, so once no renewal can move its end the worker stops renewing it, and a
// heartbeat that fails then does not cancel the handler. Both jobs' rows are held, so
// every heartbeat waits and times out: the handler whose key has no expire_after is
// cancelled after 3 s and given back; the one whose key's expire_after (1 s) has passed
// runs on and succeeds in its first attempt. Before, both were cancelled.
func TestS27S34ExpiredKeysNeedNoRenewal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithShutdownGrace(300*time.Millisecond))
	started, cancelled, release := handleLocked(w)
	ctx := context.Background()
	expiring, err := b.client.Dispatch(ctx, "locked", order{1},
		pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "a", ExpireAfter: time.Second}))
	require.NoError(t, err)
	renewed, err := b.client.Dispatch(ctx, "locked", order{2}, pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "b"}))
	require.NoError(t, err)
	stop := start(t, w)
	require.ElementsMatch(t, []int{1, 2}, []int{<-started, <-started})

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT FROM pgq.jobs WHERE uuid IN ($1, $2) FOR UPDATE`, expiring, renewed)
	require.NoError(t, err)
	select {
	case id := <-cancelled:
		require.Equal(t, 2, id, "the handler whose key has no expire_after is cancelled first")
	case <-time.After(10 * time.Second):
		t.Fatal("the handler whose overlap lease could not be renewed was not cancelled")
	}
	select {
	case id := <-cancelled:
		t.Fatalf("handler %d was cancelled although its key's expire_after had passed", id)
	case <-time.After(3 * time.Second): // past the 3 s within which a renewal must succeed, again
	}
	require.NoError(t, tx.Rollback(ctx))
	close(release)
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0
	}, 15*time.Second, 50*time.Millisecond, "both jobs ended")
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, expiring), "one attempt, never cancelled")
	require.Equal(t, []string{"interrupted", "succeeded"}, b.outcomes(t, renewed), "given back, then run again")
	require.NoError(t, stop())
}

// S34: the overlap leases are renewed on time while the worker's other calls are slow.
// Here each poll of the operators' cancellations takes 1.9 s and each renewal 1.2 s (a
// loaded server, a lock wait): a handler holding a key for 9 s runs to the end in its
// first attempt, and the slow renewals are logged. Before, the poll and the renewal ran
// one after the other on one goroutine, the renewals came 3.75 s apart, and the handler
// was cancelled as if its lease could not be renewed.
func TestS34RenewalsDoNotWaitForSlowCalls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `CREATE OR REPLACE FUNCTION pgq.cancel_requests(worker text) RETURNS SETOF uuid
		LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
		BEGIN
		    PERFORM pg_sleep(1.9);
		    RETURN QUERY SELECT j.lease_token FROM pgq.jobs j
		                 WHERE j.reserved_by = cancel_requests.worker AND j.cancel_requested_at IS NOT NULL;
		END $$`)
	b.db.Exec(t, `CREATE FUNCTION public.slow_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(1.2); RETURN NEW; END $$`)
	b.db.Exec(t, `CREATE TRIGGER slow_renewal BEFORE UPDATE ON pgq.overlap_locks FOR EACH ROW
		WHEN (OLD.job_uuid = NEW.job_uuid) EXECUTE FUNCTION public.slow_renewal()`)
	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	worker.Handle(w, "keyed", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(9 * time.Second):
			return nil
		}
	}})
	id, err := b.client.Dispatch(context.Background(), "keyed", order{1}, pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "k"}))
	require.NoError(t, err)
	stop := start(t, w)
	require.Eventually(t, func() bool { return len(b.outcomes(t, id)) == 1 }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, id), logs.String())
	require.NotContains(t, logs.String(), "not renewed in time")
	require.Contains(t, logs.String(), "heartbeat slow", "the renewals were slow, and said so")
}

// S14, S34: a heartbeat that finds a job gone whose handler has already returned (its
// completion committed while the heartbeat waited, as happens in a drain of jobs with
// overlap keys, which are in every heartbeat) says nothing: there is no handler to
// cancel and no lease was lost. Here the job's row is held while its handler returns,
// so that its completion and the next heartbeat both wait for it, in that order. Before,
// a drain of 20,000 such jobs logged hundreds of "lease lost; cancelling handler".
func TestS14S34HeartbeatQuietAboutReturnedHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	worker.Handle(w, "keyed", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- struct{}{}
		<-release
		return nil
	}})
	ctx := context.Background()
	id, err := b.client.Dispatch(ctx, "keyed", order{1}, pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "k"}))
	require.NoError(t, err)
	stop := start(t, w)
	<-started
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT FROM pgq.jobs WHERE uuid = $1 FOR UPDATE`, id)
	require.NoError(t, err)
	close(release)
	time.Sleep(1500 * time.Millisecond) // a heartbeat is sent and waits: within its 2 s timeout
	require.NoError(t, tx.Rollback(ctx))
	require.Eventually(t, func() bool { return len(b.outcomes(t, id)) == 1 }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, id))
	time.Sleep(200 * time.Millisecond) // the heartbeat's answer is in
	require.NoError(t, stop())
	require.NotContains(t, logs.String(), "lease lost")
}

// After a reserve that came back short, a notification waits out the fetch cooldown, so
// a trickle of dispatches is gathered into fewer reserves; the job still starts.
func TestFetchCooldownAfterShortReserve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := worker.New(b.db.WorkerPool, worker.WithLogger(quiet), worker.WithSleep(time.Minute),
		worker.WithFetchCooldown(500*time.Millisecond))
	require.NoError(t, err)
	started := make(chan time.Time, 2)
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- time.Now()
		return nil
	}})
	stop := start(t, w)
	waitListening(t, b)

	_, err = b.client.Dispatch(context.Background(), "ping", order{1})
	require.NoError(t, err)
	first := <-started // its reserve found 1 job for 100 slots: short
	_, err = b.client.Dispatch(context.Background(), "ping", order{2})
	require.NoError(t, err)
	select {
	case second := <-started:
		require.GreaterOrEqual(t, second.Sub(first), 400*time.Millisecond,
			"the second job waited for the cooldown of the first job's short reserve")
	case <-time.After(10 * time.Second):
		t.Fatal("the second job never started")
	}
	require.NoError(t, stop())

	_, err = worker.New(b.db.WorkerPool, worker.WithFetchCooldown(-time.Second))
	require.ErrorContains(t, err, "WithFetchCooldown: must be >= 0")
}

// S47: under load a worker whose role owns pgq.jobs vacuums it itself once it holds enough
// dead rows, and pgq.fair_turns with it: the dead entries at the head of the reserve
// index would otherwise slow every reserve. A worker with the least privileges cannot
// (only a table's owner may vacuum it) and says so once instead of failing each second.
func TestS47WorkerVacuumsJobsOnlyAsOwner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	vacuums := func() int {
		return pgqtest.Scalar[int](t, b.db, `SELECT max(vacuum_count)::int FROM pg_stat_user_tables WHERE relid IN (SELECT partition FROM pgq.job_slots)`) // a vacuum of pgq.jobs is one of each slot
	}
	turnVacuums := func() int {
		return pgqtest.Scalar[int](t, b.db, `SELECT vacuum_count::int FROM pg_stat_user_tables WHERE relid = 'pgq.fair_turns'::regclass`)
	}
	before, turnsBefore := vacuums(), turnVacuums()
	b.dispatchOrders(t, "ping", 300)
	owner, err := worker.New(b.db.Pool, worker.WithLogger(quiet), worker.WithSleep(100*time.Millisecond), worker.WithVacuumAfter(100))
	require.NoError(t, err)
	worker.Handle(owner, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	stop := start(t, owner)
	require.Eventually(t, func() bool { return vacuums() > before }, 20*time.Second, 100*time.Millisecond,
		"300 finished jobs leave 600 dead rows; the worker vacuums past 100")
	require.NoError(t, stop())
	require.Greater(t, turnVacuums(), turnsBefore, "the turns of fair queues are vacuumed with the jobs")

	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithVacuumAfter(100), worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	stop = start(t, w)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "pgq.jobs is left to autovacuum") },
		10*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
	require.Equal(t, 1, strings.Count(logs.String(), "left to autovacuum"), "said once, not each second")

	_, err = worker.New(b.db.Pool, worker.WithVacuumAfter(-1))
	require.ErrorContains(t, err, "WithVacuumAfter: must be >= 0")
}

// S80, S125: a worker whose slot size is 0 leaves the slots where they are but still
// calls pgq.rotate each second for the rest of its work: a fair queue's key parked while
// its job ran is parked for a minute once the job has ended, not kept for ever.
func TestS80S125WorkerWithSlotsLeftStillRotates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `SELECT pgq.define_queue('fairq', fair_by => 'tenant')`)
	b.db.Exec(t, `SELECT pgq.dispatch('ping', '{"order_id": 1, "tenant": "a"}', queue => 'fairq')`)
	w := b.worker(t, worker.WithSlotSize(0), worker.WithQueues("fairq"))
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	stop := start(t, w)
	defer func() { require.NoError(t, stop()) }()
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[bool](t, b.db, `SELECT coalesce(bool_and(parked_until BETWEEN now() AND now() + interval '1 minute'), false)
		    FROM pgq.fair_turns WHERE queue = 'fairq' AND NOT EXISTS (SELECT FROM pgq.jobs WHERE queue = 'fairq')`)
	}, 10*time.Second, 100*time.Millisecond, "a's turn parked for a minute once its job ended")
	require.Equal(t, "current", pgqtest.Scalar[string](t, b.db, `SELECT state::text FROM pgq.job_slots WHERE slot = 0`), "the slots stay")
}

// WithConcurrency bounds the handlers running at once, whatever the batching of their
// outcomes; every job still runs exactly once.
func TestConcurrencyBoundsRunningHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.dispatchOrders(t, "ping", 60)
	w := b.worker(t, worker.WithConcurrency(4), worker.WithStopWhenEmpty())
	var mu sync.Mutex
	now, most := 0, 0
	ran := map[int]int{}
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(_ context.Context, j *worker.Job[order]) error {
		mu.Lock()
		now++
		most = max(most, now)
		ran[j.Args.OrderID]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		now--
		mu.Unlock()
		return nil
	}})
	drain(t, w)
	require.Equal(t, 4, most, "four handlers at once, never more")
	require.Len(t, ran, 60)
	for id, n := range ran {
		require.Equal(t, 1, n, "job %d", id)
	}
	require.Equal(t, 60, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
}

// The handler goroutines are reused from job to job, and none outlives Run. Not
// parallel: it counts every goroutine of the test binary that waits for a job.
func TestHandlerGoroutinesEndWithRun(t *testing.T) {
	b := setup(t)
	b.dispatchOrders(t, "ping", 200)
	w := b.worker(t, worker.WithConcurrency(8), worker.WithStopWhenEmpty())
	var mu sync.Mutex
	ran := 0
	goroutines := map[string]bool{}
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error {
		buf := make([]byte, 64)
		id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
		mu.Lock()
		ran++
		goroutines[id] = true
		mu.Unlock()
		return nil
	}})
	drain(t, w)
	require.Equal(t, 200, ran)
	// A goroutine that reported its job may not be waiting yet when the next one starts,
	// so a few more than 8 can exist; one per job would be 200.
	require.LessOrEqual(t, len(goroutines), 16, "handler goroutines are reused")
	require.Eventually(t, func() bool { return handlerGoroutines() == 0 }, 5*time.Second, 10*time.Millisecond,
		"handler goroutines exit when Run returns")
}

// handlerGoroutines counts the goroutines running or waiting in the executor's handle.
func handlerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "worker.(*executor).handle(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// lockedBuffer collects log output written from the worker's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// S15: a Go handler that returns after its lease went to another reservation does not
// complete the job: the completion batch it shares with a job that still holds its lease
// completes only that one, and the worker reports the other as lease_lost.
func TestS15GoCompletionFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	stolen := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	worker.Handle(w, "fenced", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started.Done()
		<-stolen // both return together: one completion batch, most likely
		return nil
	}})
	lost, err := b.client.Dispatch(context.Background(), "fenced", order{1})
	require.NoError(t, err)
	kept, err := b.client.Dispatch(context.Background(), "fenced", order{2})
	require.NoError(t, err)
	stop := start(t, w)
	started.Wait()
	// Another reservation of the job: a new lease token, as after a lease expiry.
	b.db.Exec(t, `UPDATE pgq.jobs SET lease_token = gen_random_uuid() WHERE uuid = $1`, lost)
	close(stolen)

	require.Eventually(t, func() bool { return len(b.outcomes(t, kept)) > 0 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "outcome=lease_lost") }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, stop())
	require.Equal(t, []string{"succeeded"}, b.outcomes(t, kept))
	require.Empty(t, b.outcomes(t, lost), "no attempt of the job was completed")
	require.Equal(t, 1, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.jobs WHERE uuid = $1`, lost),
		"the job stays with the reservation that holds it")
	require.Contains(t, logs.String(), fmt.Sprintf("uuid=%s attempt=1 queue=default", lost))
	require.Equal(t, 1, strings.Count(logs.String(), "outcome=lease_lost"))
}

// S40: an operator's cancel of a running job reaches its handler within a couple of
// seconds, a Go handler through its context and a SQL handler through its statement;
// each job ends as cancelled, once, and is neither retried nor failed.
func TestS40CancelRunningHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `CREATE FUNCTION public.slow(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(60) $$`)
	b.db.Exec(t, `SELECT pgq.define_job('sql', handler => 'public.slow', tries => 3)`)
	logs := &lockedBuffer{}
	w := b.worker(t, worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	started := make(chan struct{}, 1)
	worker.Handle(w, "go", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}})
	ctx := context.Background()
	goJob, err := b.client.Dispatch(ctx, "go", order{1}, pgq.Tries(3))
	require.NoError(t, err)
	sqlJob, err := b.client.Dispatch(ctx, "sql", nil)
	require.NoError(t, err)
	stop := start(t, w)
	<-started
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pg_stat_activity WHERE query LIKE '%run_sql_job%' AND state = 'active' AND pid <> pg_backend_pid()`) == 1
	}, 10*time.Second, 20*time.Millisecond, "the SQL handler runs")

	asked := time.Now()
	for _, id := range []uuid.UUID{goJob, sqlJob} {
		r, err := b.client.Cancel(ctx, id)
		require.NoError(t, err)
		require.Equal(t, pgq.CancelRequested, r)
	}
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0
	}, 10*time.Second, 20*time.Millisecond, "both jobs ended")
	t.Logf("both handlers cancelled %s after the request", time.Since(asked).Round(time.Millisecond))
	require.Less(t, time.Since(asked), 5*time.Second)
	require.Equal(t, []string{"cancelled"}, b.outcomes(t, goJob))
	require.Equal(t, []string{"cancelled"}, b.outcomes(t, sqlJob))
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.NoError(t, stop())
	_, err = b.client.Cancel(ctx, goJob)
	require.ErrorIs(t, err, pgq.ErrNotFound)
}

// heldVacuum is a worker that vacuums pgq.jobs after 100 dead rows, started while a
// transaction holds an xid (hold), once its vacuum has said that it cannot remove them.
type heldVacuum struct {
	b    bundle
	hold pgx.Tx
	logs *lockedBuffer
	stop func() error
}

func startHeldVacuum(t *testing.T, b bundle) heldVacuum {
	t.Helper()
	hold, err := b.db.Pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = hold.Rollback(context.Background()) })
	require.NoError(t, hold.QueryRow(context.Background(), `SELECT pg_current_xact_id()`).Scan(new(any)))

	b.dispatchOrders(t, "ping", 300)
	logs := &lockedBuffer{}
	w, err := worker.New(b.db.Pool, worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		worker.WithSleep(100*time.Millisecond), worker.WithVacuumAfter(100))
	require.NoError(t, err)
	worker.Handle(w, "ping", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	stop := start(t, w)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "vacuum could not remove dead rows") },
		20*time.Second, 50*time.Millisecond)
	return heldVacuum{b: b, hold: hold, logs: logs, stop: stop}
}

// vacuums is how many times pgq.jobs was vacuumed (a vacuum of pgq.jobs is one of each slot).
func (h heldVacuum) vacuums(t *testing.T) int {
	return pgqtest.Scalar[int](t, h.b.db, `SELECT max(vacuum_count)::int FROM pg_stat_user_tables WHERE relid IN (SELECT partition FROM pgq.job_slots)`)
}

// size is the bytes of pgq.jobs's slots, without their indexes.
func (h heldVacuum) size(t *testing.T) int64 {
	return pgqtest.Scalar[int64](t, h.b.db, `SELECT sum(pg_relation_size(partition))::bigint FROM pgq.job_slots`)
}

// S47, S77: while a transaction holds the xmin horizon back, a vacuum of pgq.jobs can
// remove nothing, and vacuuming each second would only read a growing table. The worker
// says so once and tries again after 2, 4, 8 … seconds; once the horizon moves, a
// vacuum removes the rows and it says that too.
func TestS47S77S79VacuumBacksOffWhileTheHorizonIsHeld(t *testing.T) {
	t.Parallel()
	h := startHeldVacuum(t, setup(t))
	before := h.vacuums(t)
	time.Sleep(5 * time.Second)
	require.LessOrEqual(t, h.vacuums(t)-before, 2, "tries after 2 s and 4 s, not each second")

	// S79: the pages the table grew by during the hold go back to the system after it.
	held := h.size(t)
	require.NoError(t, h.hold.Rollback(context.Background()))
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "vacuum removes dead rows again") },
		30*time.Second, 100*time.Millisecond)
	require.Less(t, h.size(t), held, "the vacuum that removed the rows gave their pages back")
	require.Contains(t, h.logs.String(), "vacuum gave space back to the system")
	require.NoError(t, h.stop())
	require.Equal(t, 1, strings.Count(h.logs.String(), "could not remove"), "said once while it lasted")
}

// S79: a transaction holding a lock on pgq.jobs after a hold (a report reading it)
// keeps VACUUM from giving the table's end back: VACUUM waits for the lock up to 5 s a
// slot, and gives up. That wait sets no pause before the next vacuum, and the vacuums
// that follow leave the end alone for a while; once the lock is gone, the space goes
// back.
func TestS79AReadersLockDelaysTheShrinkNotTheVacuums(t *testing.T) {
	t.Parallel()
	b := setupWith(t, pgqtest.NewWithLoads(t, 0)) // rows of pgq.jobs, whose dead versions grow the table (S85)
	h := startHeldVacuum(t, b)
	grownFrom := h.size(t)
	b.dispatchOrders(t, "ping", 3000)
	require.Eventually(t, func() bool { return pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.live_jobs`) == 0 },
		30*time.Second, 50*time.Millisecond)
	held := h.size(t)
	require.Greater(t, held, 3*grownFrom, "the table grew well past twice its size when the hold was found")

	// The reader: a lock on every slot, and no snapshot (READ COMMITTED, between
	// statements), so that the horizon is free once the hold ends. On a connection of its
	// own: the worker's session settings (an idle-in-transaction timeout) are on the
	// pool's.
	conn, err := pgx.Connect(context.Background(), b.db.URL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	reader, err := conn.Begin(context.Background())
	require.NoError(t, err)
	_, err = reader.Exec(context.Background(), `LOCK TABLE pgq.jobs IN ACCESS SHARE MODE`)
	require.NoError(t, err)
	// New jobs all along, so that every second has dead rows to vacuum.
	feed, cancel := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for feed.Err() == nil {
			_, _ = b.client.DispatchMany(feed, "ping", []any{order{1}, order{2}, order{3}, order{4}, order{5}, order{6}, order{7}, order{8}, order{9}, order{10}})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-fed }()

	require.NoError(t, h.hold.Rollback(context.Background()))
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "vacuum gave no space back") },
		60*time.Second, 100*time.Millisecond)
	require.NotContains(t, h.logs.String(), "vacuum gave space back to the system", "the reader's lock keeps the end")
	before := h.vacuums(t)
	require.Eventually(t, func() bool { return h.vacuums(t) >= before+2 }, 8*time.Second, 100*time.Millisecond,
		"vacuums go on each second or two: the 5 s spent waiting for the lock set no 15 s pause")

	// Compared with the size when the lock goes, not when the hold ended: the feed's jobs
	// may grow the table a little while the reader keeps its end (by 72 kB in one CI run).
	locked := h.size(t)
	require.NoError(t, reader.Rollback(context.Background()))
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "vacuum gave space back to the system") },
		60*time.Second, 100*time.Millisecond, "tried again once the lock is gone")
	require.Less(t, h.size(t), locked)
	require.NoError(t, h.stop())
}
