package sql_test

// What a producer may choose (S90, S91), what the server can run (S92), who may add to
// a batch (S93) and what a callback_failed event tells (S94), each as the role that
// does it: a producer's login, the worker's, an admin's.

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S94 (S45): a callback that cannot be queued is told on pgq_events, which any role may
// LISTEN to, by its name, batch and chain only: never the error, which may quote the
// payload (here a key made of the batch's name).
func TestS45S94CallbackFailedCarriesIdsOnly(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	nobody := db.ConnAs(t, pgqtest.NobodyRole)
	_, err := nobody.Exec(ctx, `LISTEN pgq_events`)
	require.NoError(t, err)
	db.Exec(t, `SELECT pgq.define_job('done', unique_by => '{name}')`)
	name := "secret-" + strings.Repeat("x", 990)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "a"}]', name => $1, then_job => 'done')`, name)
	require.True(t, complete(t, db, reserveOne(t, db, clock())))
	require.Zero(t, jobsNamed(t, db, "done"), "the callback could not be queued: its key is too long")

	n := notification(t, nobody, 5*time.Second)
	require.NotNil(t, n)
	require.JSONEq(t, `{"event": "callback_failed", "job": "done", "chain_id": null, "batch_id": "`+batch.String()+`"}`, n.Payload)
}
