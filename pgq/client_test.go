package pgq_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
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
