package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

type part struct {
	N int `json:"n"`
}

type batchDone struct {
	BatchID    uuid.UUID `json:"batch_id"`
	Name       string    `json:"name"`
	TotalJobs  int       `json:"total_jobs"`
	FailedJobs int       `json:"failed_jobs"`
}

// Go handlers in a batch and a chain: job.Batch() names the batch and lets a running
// member add more (S73); the chain's steps run in order (S70); then and finally run
// once, when the added job has run too (S76); the Go API dispatches in a transaction.
func TestS70S73S76GoHandlersInABatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var ran, added, thens, finallies atomic.Int32
	var order []int
	var orderCh = make(chan int, 10)
	var gotBatch atomic.Value
	var thenPayload atomic.Value

	w := b.worker(t, worker.WithStopWhenEmpty())
	worker.Handle(w, "part", worker.Handler[part]{Run: func(ctx context.Context, job *worker.Job[part]) error {
		ran.Add(1)
		batch, err := job.Batch(ctx)
		if err != nil {
			return err
		}
		gotBatch.Store(batch.ID)
		if job.Args.N == 1 {
			n, err := batch.Add(ctx, pgq.BatchJob("part", part{N: 100}))
			added.Add(int32(n))
			return err
		}
		return nil
	}})
	worker.Handle(w, "step", worker.Handler[part]{Run: func(ctx context.Context, job *worker.Job[part]) error {
		orderCh <- job.Args.N
		return nil
	}})
	worker.Handle(w, "then", worker.Handler[batchDone]{Run: func(ctx context.Context, job *worker.Job[batchDone]) error {
		thens.Add(1)
		thenPayload.Store(job.Args)
		return nil
	}})
	worker.Handle(w, "finally", worker.Handler[batchDone]{Run: func(ctx context.Context, job *worker.Job[batchDone]) error {
		finallies.Add(1)
		return nil
	}})

	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	id, err := b.client.DispatchBatchTx(ctx, tx, []pgq.BatchMember{
		pgq.BatchJob("part", part{N: 1}), pgq.BatchJob("part", part{N: 2}, pgq.Tries(3)),
		pgq.BatchChain("", pgq.Step{Job: "step", Args: part{N: 1}}, pgq.Step{Job: "step", Args: part{N: 2}},
			pgq.Step{Job: "step", Args: part{N: 3}}),
	}, pgq.BatchOptions{Name: "go", Then: "then", Finally: "finally"})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	drain(t, w)
	close(orderCh)
	for n := range orderCh {
		order = append(order, n)
	}
	require.Equal(t, []int{1, 2, 3}, order)
	require.EqualValues(t, 3, ran.Load())
	require.EqualValues(t, 1, added.Load())
	require.Equal(t, id, gotBatch.Load())
	require.EqualValues(t, 1, thens.Load())
	require.EqualValues(t, 1, finallies.Load())
	require.Equal(t, batchDone{BatchID: id, Name: "go", TotalJobs: 4}, thenPayload.Load())

	batch, err := b.client.Batch(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 4, batch.TotalJobs)
	require.Equal(t, 4, batch.SucceededJobs)
	require.Equal(t, 0, batch.PendingJobs)
	require.EqualValues(t, 100, batch.Progress)
	require.NotNil(t, batch.FinishedAt)

	_, err = b.client.AddToBatch(ctx, id, []pgq.BatchMember{pgq.BatchJob("part", nil)})
	require.ErrorIs(t, err, pgq.ErrBatchClosed)
	_, err = b.client.CancelBatch(ctx, uuid.New())
	require.ErrorIs(t, err, pgq.ErrNotFound)

	// A chain through the Go API, and a bad step.
	chain, err := b.client.DispatchChain(ctx, []pgq.Step{{Job: "step", Args: part{N: 7}, Options: []pgq.Option{pgq.Delay(time.Hour)}}},
		pgq.ChainOptions{OnFailure: "chain_failed"})
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, chain)
	_, err = b.client.DispatchChain(ctx, nil, pgq.ChainOptions{})
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
}
