package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// S80: three workers, running as the least-privileged worker role, under an idle
// transaction holding the xmin horizon, with a producer dispatching 1,000 jobs a second
// for 15 s; some jobs fail once (a backoff), and one job a round waits an hour (a delay):
// each slot holds some, so none empties by itself, and the slots can come round only by
// moving them, however fast the machine is. The workers' own calls of pgq.rotate keep
// pgq.jobs within four slots and what a second of the load writes; once the producer
// stops the waiting jobs are run now (pgq.run_now), and every job runs, and succeeds,
// once.
func TestS80WorkersKeepTheTableBoundedUnderAHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hold, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx)
	require.NoError(t, hold.QueryRow(ctx, `SELECT pg_current_xact_id()`).Scan(new(any)))

	const slot = 1 << 20
	var runs sync.Map // job uuid -> *atomic.Int32, handler starts
	var succeeded atomic.Int64
	logs := &lockedBuffer{}
	for i := range 3 {
		w := b.worker(t, worker.WithSlotSize(slot), worker.WithConcurrency(50), worker.WithBackoff(1),
			worker.WithTries(2), worker.WithName("w"+string(rune('0'+i))),
			worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		worker.Handle(w, "step", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
			n, _ := runs.LoadOrStore(j.UUID, new(atomic.Int32))
			if n.(*atomic.Int32).Add(1) == 1 && j.Args.OrderID%10 == 0 {
				return errors.New("fails once")
			}
			succeeded.Add(1)
			return nil
		}})
		start(t, w)
	}

	var largest atomic.Int64
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var n int64
			if err := b.db.Pool.QueryRow(ctx, `SELECT sum(bytes)::bigint FROM pgq.job_storage`).Scan(&n); err == nil && n > largest.Load() {
				largest.Store(n)
			}
		}
	}()

	dispatched := 0
	var waiting []uuid.UUID
	for round := range 150 {
		payloads := make([]any, 100)
		for i := range payloads {
			payloads[i] = order{round*100 + i}
		}
		_, err := b.client.DispatchMany(ctx, "step", payloads)
		require.NoError(t, err)
		id, err := b.client.Dispatch(ctx, "step", order{1}, pgq.Delay(time.Hour))
		require.NoError(t, err)
		waiting = append(waiting, id)
		dispatched += len(payloads) + 1
		time.Sleep(100 * time.Millisecond)
	}
	moves := strings.Count(logs.String(), "moved from slot") // before pgq.run_now, which empties the slots
	for _, id := range waiting {
		require.NoError(t, b.client.RunNow(ctx, id))
	}
	require.Eventually(t, func() bool { return succeeded.Load() >= int64(dispatched) }, 60*time.Second, 100*time.Millisecond,
		"every job ran")
	close(stopSampling)
	<-sampled

	double := 0
	runs.Range(func(id, n any) bool {
		want := int32(1)
		if pgqtest.Scalar[bool](t, b.db, `SELECT EXISTS (SELECT FROM pgq.attempts WHERE job_uuid = $1 AND outcome = 'failed')`, id.(uuid.UUID)) {
			want = 2
		}
		if n.(*atomic.Int32).Load() != want {
			double++
		}
		return true
	})
	require.Zero(t, double, "jobs whose handler ran more often than their attempts say")
	require.EqualValues(t, dispatched, succeeded.Load(), "every job succeeded once")
	require.Equal(t, dispatched, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))

	text := logs.String()
	t.Logf("%d jobs; pgq.jobs at most %d kB with slots of %d kB; %d truncations, %d moves", dispatched, largest.Load()>>10, slot>>10,
		strings.Count(text, "truncated"), moves)
	require.GreaterOrEqual(t, strings.Count(text, "truncated"), 3, "slots were truncated under the hold")
	require.Positive(t, moves, "delayed jobs were moved out of a draining slot while the producer ran")
	require.Less(t, largest.Load(), int64(4*slot+4<<20), "four slots and what a second of the load writes")
}

// WithSlotSize refuses a size pgq.rotate would refuse; 0 turns the rotation off.
func TestS80WithSlotSizeChecksItsArgument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, bad := range []int64{-1, 1, 65535} {
		_, err := worker.New(b.db.WorkerPool, worker.WithSlotSize(bad))
		require.ErrorContains(t, err, "WithSlotSize: must be 0 or >= 65536", "%d", bad)
	}
	for _, good := range []int64{0, 65536, 64 << 20} {
		_, err := worker.New(b.db.WorkerPool, worker.WithSlotSize(good))
		require.NoError(t, err, "%d", good)
	}
}
