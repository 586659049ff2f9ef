package pgq_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/pgq"
)

// Migrate the schema, then dispatch a job inside your own transaction: it exists, and
// workers are woken, only if the transaction commits.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if _, err := pgq.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	client, err := pgq.NewClient(pool)
	if err != nil {
		log.Fatal(err)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// ... INSERT INTO orders ... in tx
	id, err := client.DispatchTx(ctx, tx, "send_invoice", map[string]int{"order_id": 7},
		pgq.Tries(4), pgq.Backoff(10*time.Second, time.Minute, 5*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued", id)
}

// Declare a job class once (Go programs do it at start; SQL users call pgq.define_job):
// new dispatches copy its settings.
func ExampleClient_DefineJob() {
	var client *pgq.Client // from pgq.NewClient
	ctx := context.Background()
	err := client.DefineJob(ctx, "sync_invoices",
		pgq.Tries(4), pgq.Backoff(time.Minute, 5*time.Minute, 15*time.Minute),
		pgq.UniqueFor(time.Hour), pgq.UniqueBy("account_id"))
	if err != nil {
		log.Fatal(err)
	}
}

// A debounced dispatch: only the newest push per product runs, at most two minutes
// after the first of a burst.
func ExampleDebounceKey() {
	var client *pgq.Client
	ctx := context.Background()
	_, err := client.Dispatch(ctx, "push_price", map[string]int{"product_id": 5, "price_in_cents": 1200},
		pgq.DebounceKey("5"), pgq.DebounceFor(30*time.Second), pgq.DebounceMaxWait(2*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
}

// Middleware, evaluated by PostgreSQL before the handler: one sync per product at a time,
// within the vendor's budget, behind a circuit breaker.
func ExampleWithMiddleware() {
	var client *pgq.Client
	ctx := context.Background()
	if err := client.DefineLimit(ctx, "vendor_api", 60, time.Minute); err != nil {
		log.Fatal(err)
	}
	err := client.DefineJob(ctx, "sync_inventory", pgq.Tries(3), pgq.WithMiddleware(
		pgq.WithoutOverlapping{By: []string{"product_id"}, ReleaseAfter: 5 * time.Second, ExpireAfter: 30 * time.Second},
		pgq.RateLimited{Limit: "vendor_api"},
		pgq.ThrottlesExceptions{MaxExceptions: 2, Decay: time.Minute},
	))
	if err != nil {
		log.Fatal(err)
	}
}

// Put a failed job back on its queue after shipping the fix; its history is kept.
func ExampleClient_RetryFailed() {
	var client *pgq.Client
	ctx := context.Background()
	failed, err := client.FailedJobs(ctx, "", 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range failed {
		history, _ := client.Attempts(ctx, f.UUID)
		fmt.Println(f.Job, f.Exception, len(history), "attempts")
		if err := client.RetryFailed(ctx, f.UUID); err != nil {
			log.Fatal(err)
		}
	}
}

// A chain: reserve_stock, then charge_card (its own tries and backoff), then ship; if a
// step fails for good the rest never run and order_failed is queued with the chain id,
// the step and the exception.
func ExampleClient_DispatchChain() {
	var client *pgq.Client // from pgq.NewClient
	ctx := context.Background()
	order := map[string]int{"order_id": 42}
	id, err := client.DispatchChain(ctx, []pgq.Step{
		{Job: "reserve_stock", Args: order},
		{Job: "charge_card", Args: order, Options: []pgq.Option{pgq.Tries(3), pgq.Backoff(10 * time.Second)}},
		{Job: "ship", Args: order},
	}, pgq.ChainOptions{OnFailure: "order_failed"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("chain", id) // SELECT * FROM pgq.chains WHERE id = …
}

// A batch of jobs and a chain with callbacks; import_done runs once when every member
// succeeded, import_finally once when every member has finished.
func ExampleClient_DispatchBatch() {
	var client *pgq.Client // from pgq.NewClient
	ctx := context.Background()
	members := []pgq.BatchMember{
		pgq.BatchJob("resize", map[string]int{"image": 1}),
		pgq.BatchJob("resize", map[string]int{"image": 2}, pgq.Tries(3)),
		pgq.BatchChain("", pgq.Step{Job: "reserve_stock", Args: map[string]int{"order_id": 43}},
			pgq.Step{Job: "ship", Args: map[string]int{"order_id": 43}}),
	}
	id, err := client.DispatchBatch(ctx, members, pgq.BatchOptions{
		Name: "import", Then: "import_done", Catch: "import_failed", Finally: "import_finally", AllowFailures: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	b, err := client.Batch(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d of %d pending, %.0f%%\n", b.Name, b.PendingJobs, b.TotalJobs, b.Progress)
}
