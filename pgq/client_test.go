package pgq_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

type syncInvoices struct {
	AccountID int `json:"account_id"`
}

func (a syncInvoices) UniqueID() string         { return "acct-" + strconv.Itoa(a.AccountID) }
func (a syncInvoices) UniqueFor() time.Duration { return time.Hour }

type pushPrice struct {
	ProductID int `json:"product_id"`
	Price     int `json:"price_in_cents"`
}

func (a pushPrice) DebounceID() string         { return "product-" + strconv.Itoa(a.ProductID) }
func (a pushPrice) DebounceFor() time.Duration { return 30 * time.Second }

// S21 and S24 through the Go API: the argument type carries the unique or debounce key;
// a dropped duplicate dispatch returns uuid.Nil and no error.
func TestS21S24ArgumentTypes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	ctx := context.Background()

	first, err := client.Dispatch(ctx, "sync_invoices", syncInvoices{AccountID: 7})
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, first)
	dup, err := client.Dispatch(ctx, "sync_invoices", syncInvoices{AccountID: 7})
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, dup, "dropped")
	ids, err := client.DispatchMany(ctx, "sync_invoices", []any{syncInvoices{7}, syncInvoices{8}})
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, ids[0])
	require.NotEqual(t, uuid.Nil, ids[1])
	require.Equal(t, "sync_invoices:acct-7", pgqtest.Scalar[string](t, db, `SELECT key FROM pgq.unique_locks WHERE job_uuid = $1`, first))

	_, err = client.Dispatch(ctx, "push_price", pushPrice{5, 1000})
	require.NoError(t, err)
	newest, err := client.Dispatch(ctx, "push_price", pushPrice{5, 1200})
	require.NoError(t, err)
	require.Equal(t, newest, pgqtest.Scalar[uuid.UUID](t, db, `SELECT job_uuid FROM pgq.debounce_tokens WHERE key = 'push_price:product-5'`))

	// S1, S9: RetryFor becomes retry_until by the database's clock, not the client's
	deadline, err := client.Dispatch(ctx, "deadline", nil, pgq.RetryFor(time.Hour))
	require.NoError(t, err)
	require.Equal(t, time.Hour, pgqtest.Scalar[time.Duration](t, db, `SELECT retry_until - created_at FROM pgq.jobs WHERE uuid = $1`, deadline))

	// options: until-processing by class, per-dispatch keys
	require.NoError(t, client.DefineJob(ctx, "recompute", pgq.UniqueFor(40*time.Minute), pgq.UniqueUntilProcessing(), pgq.UniqueBy("account_id")))
	require.Equal(t, "processing", pgqtest.Scalar[string](t, db, `SELECT unique_until FROM pgq.job_classes WHERE name = 'recompute'`))
	_, err = client.Dispatch(ctx, "x", nil, pgq.UniqueKey("a"), pgq.DebounceKey("a"), pgq.DebounceFor(time.Second))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "S25")
	err = client.DefineJob(ctx, "x", pgq.UniqueKey("a"))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "UniqueKey is per dispatch")
}

type syncInventory struct {
	ProductID int `json:"product_id"`
}

func (syncInventory) Middleware() []pgq.Middleware {
	return []pgq.Middleware{
		pgq.WithoutOverlapping{By: []string{"product_id"}, ReleaseAfter: 5 * time.Second, ExpireAfter: 30 * time.Second},
		pgq.RateLimited{Limit: "vendor_api"},
		pgq.ThrottlesExceptions{MaxExceptions: 2, Decay: time.Minute},
	}
}

// S26-S29 through the Go API: middleware from the argument type or an option is frozen
// into the job as the same JSON a SQL dispatch would carry.
func TestS26S29MiddlewareFromGo(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, client.DefineLimit(ctx, "vendor_api", 60, time.Minute))
	require.ErrorIs(t, client.DefineLimit(ctx, "bad", 0, time.Minute), pgq.ErrInvalidArgument)

	id, err := client.Dispatch(ctx, "sync_inventory", syncInventory{ProductID: 88})
	require.NoError(t, err)
	require.JSONEq(t, `[
	  {"without_overlapping": {"by": ["product_id"], "release_after": 5, "expire_after": 30}},
	  {"rate_limited": {"limit": "vendor_api"}},
	  {"throttles_exceptions": {"max_exceptions": 2, "decay": 60, "backoff": 0}}]`,
		pgqtest.Scalar[string](t, db, `SELECT middleware::text FROM pgq.jobs WHERE uuid = $1`, id))

	plain, err := client.Dispatch(ctx, "plain", nil)
	require.NoError(t, err)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT middleware IS NULL FROM pgq.jobs WHERE uuid = $1`, plain))

	_, err = client.Dispatch(ctx, "x", nil, pgq.WithMiddleware(pgq.RateLimited{Limit: "undefined"}))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
	require.NoError(t, client.DefineJob(ctx, "shared_lock", pgq.WithMiddleware(pgq.WithoutOverlapping{Key: "ledger", Shared: true, DontRelease: true})))
	require.JSONEq(t, `[{"without_overlapping": {"key": "ledger", "shared": true, "dont_release": true, "release_after": 0}}]`,
		pgqtest.Scalar[string](t, db, `SELECT middleware::text FROM pgq.job_classes WHERE name = 'shared_lock'`))
}

// S68: DispatchMany with ByCopy goes by COPY (pgq.stage_dispatch, COPY into the
// session's staging table, pgq.dispatch_staged) and writes what the jsonb[] path
// writes, uuids in payload order; every payload is checked as pgq.dispatch checks it,
// and a bad one writes nothing. A producer role, which may only dispatch, can use it,
// and cannot slip its own table in as the staging table.
func TestS68DispatchManyByCopy(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE pgq_producer")
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	client, err := pgq.NewClient(pool)
	require.NoError(t, err)

	batch := func(n int, first int) []any {
		args := make([]any, n)
		for i := range args {
			args[i] = map[string]int{"k": first + i}
		}
		return args
	}
	opts := []pgq.Option{pgq.Queue("bulk"), pgq.Tries(3), pgq.Priority(5),
		pgq.WithMiddleware(pgq.WithoutOverlapping{By: []string{"k"}})}
	const n = 1000
	ids, err := client.DispatchMany(ctx, "load", batch(n, 0), append(opts, pgq.ByCopy())...)
	require.NoError(t, err)
	require.Len(t, ids, n)
	require.Equal(t, n, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM unnest($1::uuid[]) WITH ORDINALITY u(id, n)
	    JOIN pgq.jobs j ON j.uuid = u.id AND (j.payload ->> 'k')::int = u.n - 1`, ids), "uuids in payload order")
	plain, err := client.DispatchMany(ctx, "load", batch(n, n), opts...)
	require.NoError(t, err)
	require.Len(t, plain, n)
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(DISTINCT (queue, priority, tries, middleware, wait_reason, attempts,
	    available_at <= now(), handler, timeout, backoff, retry_until, unique_key, debounce_key))::int FROM pgq.jobs`),
		"the COPY path and the jsonb[] path write the same job")

	before := pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`)
	bad := batch(n, 0)
	bad[500] = map[string]int{"j": 1}
	_, err = client.DispatchMany(ctx, "load", bad, append(opts, pgq.ByCopy())...)
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "a payload without the overlap key's field")
	require.ErrorContains(t, err, "lacks field")
	require.Equal(t, before, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`), "nothing written")
	_, err = client.DispatchMany(ctx, "load", batch(2, 0), pgq.ByCopy(), pgq.UniqueKey("k"))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "a dropped duplicate has no uuid to return")
	_, err = client.DispatchMany(ctx, "load", []any{syncInvoices{AccountID: 1}}, pgq.ByCopy())
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "nor has one of an argument carrying its unique key")

	// A table of the producer's own under the staging table's name is refused.
	c2, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer c2.Close(ctx)
	_, err = c2.Exec(ctx, `SET ROLE pgq_producer; CREATE TEMPORARY TABLE pgq_staged_payloads (payload jsonb)`)
	require.NoError(t, err)
	_, err = c2.Exec(ctx, `SELECT pgq.stage_dispatch()`)
	require.ErrorContains(t, err, "not the staging table of pgq.stage_dispatch")
	_, err = c2.Exec(ctx, `SELECT pgq.dispatch_staged('load')`)
	require.ErrorContains(t, err, "not the staging table of pgq.stage_dispatch")
}

// S90, S92 through the Go API: DefineJob declares a class's ceilings; a producer's
// Dispatch past them, or with a timeout PostgreSQL cannot set, is ErrInvalidArgument;
// the ceilings are DefineJob's only.
func TestS90S92CeilingsFromGo(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	admin, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	require.NoError(t, admin.DefineJob(ctx, "capped", pgq.Tries(2), pgq.MaxTries(5), pgq.MaxRetryFor(time.Hour),
		pgq.MinBackoff(5*time.Second), pgq.MaxTimeout(2*time.Minute)))
	var maxTries, minBackoff, maxTimeout int
	var maxRetryFor time.Duration
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT max_tries, max_retry_for, min_backoff, max_timeout FROM pgq.job_classes WHERE name = 'capped'`).
		Scan(&maxTries, &maxRetryFor, &minBackoff, &maxTimeout))
	require.Equal(t, []any{5, time.Hour, 5, 120}, []any{maxTries, maxRetryFor, minBackoff, maxTimeout})
	require.ErrorIs(t, admin.DefineJob(ctx, "contradiction", pgq.Tries(0), pgq.MaxTries(5)), pgq.ErrInvalidArgument)

	producer, err := pgq.NewClient(db.PoolAs(t, pgqtest.ProducerRole))
	require.NoError(t, err)
	for _, opts := range [][]pgq.Option{
		{pgq.Tries(6)},
		{pgq.Tries(0)},
		{pgq.RetryFor(2 * time.Hour)},
		{pgq.Backoff(time.Second)},
		{pgq.Timeout(3 * time.Minute)},
		{pgq.Timeout(pgq.TimeoutLimit + time.Second)},
		{pgq.Timeout(1 << 62)},
	} {
		_, err := producer.Dispatch(ctx, "capped", nil, opts...)
		require.ErrorIs(t, err, pgq.ErrInvalidArgument)
	}
	_, err = producer.Dispatch(ctx, "capped", nil, pgq.Tries(5), pgq.RetryFor(time.Hour), pgq.Backoff(5*time.Second), pgq.Timeout(2*time.Minute))
	require.NoError(t, err)
	_, err = producer.Dispatch(ctx, "capped", nil, pgq.MaxTries(0))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument, "a ceiling is the class's, not a dispatch's")
}

// S124: a DispatchMany of more than 16,384 payloads goes in parts, all in one
// transaction, in argument order.
func TestS124LargeDispatchManyGoesInPartsOfOneTransaction(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)

	const n = 2*16384 + 5 // three parts
	args := make([]any, n)
	for i := range args {
		args[i] = map[string]int{"k": i}
	}
	ids, err := client.DispatchMany(ctx, "parts", args, pgq.Queue("parts"))
	require.NoError(t, err)
	require.Len(t, ids, n)
	require.Equal(t, n, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM unnest($1::uuid[]) WITH ORDINALITY u(id, n)
	    JOIN pgq.live_jobs j ON j.uuid = u.id AND (j.payload ->> 'k')::int = u.n - 1`, ids), "uuids in argument order")
	require.Equal(t, n, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM (
	    SELECT (payload ->> 'k')::int AS k, row_number() OVER (ORDER BY id) - 1 AS place FROM pgq.live_jobs WHERE queue = 'parts') q
	    WHERE k = place`), "the jobs queue in argument order")
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(DISTINCT xmin::text)::int FROM pgq.loads WHERE queue = 'parts'`),
		"every part written by one transaction")
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(DISTINCT left(u::text, 24))::int FROM unnest($1::uuid[]) u`, ids),
		"in three calls (the uuids of one call share all but their last 48 bits)")

	// A bad payload in the last part queues none of the parts before it.
	bad := slices.Clone(args)
	bad[n-1] = json.RawMessage(`{"k":`)
	_, err = client.DispatchMany(ctx, "parts", bad, pgq.Queue("parts-bad"))
	require.Error(t, err)
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs WHERE queue = 'parts-bad'`), "nothing queued")

	// Inside the caller's transaction, the parts go with it.
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = client.DispatchManyTx(ctx, tx, "parts", args, pgq.Queue("parts-tx"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs WHERE queue = 'parts-tx'`), "rolled back with it")
}
