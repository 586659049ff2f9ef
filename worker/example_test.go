package worker_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/worker"
)

type invoice struct {
	OrderID int `json:"order_id"`
}

// Embed a worker: typed handlers by job name, a failed hook, and a graceful stop on
// SIGTERM/SIGINT.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	w, err := worker.New(pool, worker.WithQueues("high", "default"), worker.WithConcurrency(20),
		worker.WithTries(3), worker.WithTimeout(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle(w, "send_invoice", worker.Handler[invoice]{
		Run: func(ctx context.Context, job *worker.Job[invoice]) error {
			if job.Args.OrderID == 0 {
				return errors.New("no order") // an exception: retried with backoff, then failed
			}
			return nil // done
		},
		Failed: func(ctx context.Context, job *worker.Job[invoice], err error) {
			log.Printf("invoice for order %d failed for good: %v", job.Args.OrderID, err)
		},
	})
	worker.Handle(w, "poll_vendor", worker.Handler[invoice]{
		Run: func(ctx context.Context, job *worker.Job[invoice]) error {
			return worker.Release(time.Minute) // not ready yet: back in a minute, no exception
		},
	})
	if err := w.Run(ctx); errors.Is(err, worker.ErrHandlerStuck) {
		os.Exit(1) // a handler ignored its timeout: let the supervisor restart the process
	} else if err != nil {
		log.Fatal(err)
	}
}

// Run behind PgBouncer in transaction mode: handlers, completions and heartbeats go
// through the pooler, on connections that prepare no statement by name; the reserve,
// its nap and LISTEN go over a small pool of direct connections.
func ExampleWithTransactionPooler() {
	ctx := context.Background()
	pooled, err := pgxpool.New(ctx, "postgres://shop_worker@pgbouncer:6432/shop?default_query_exec_mode=exec")
	if err != nil {
		log.Fatal(err)
	}
	defer pooled.Close()
	direct, err := pgxpool.New(ctx, "postgres://shop_worker@db1:5432/shop?pool_max_conns=2")
	if err != nil {
		log.Fatal(err)
	}
	defer direct.Close()
	w, err := worker.New(pooled, worker.WithTransactionPooler(), worker.WithSessionPool(direct))
	if err != nil {
		log.Fatal(err)
	}
	_ = w.Run(ctx)
}
