package pgq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// A database without the pgq schema is reported as ErrNotMigrated.
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)
	require.NoError(t, client.CheckSchema(context.Background()))
	db.Exec(t, `DROP SCHEMA pgq CASCADE`)
	require.ErrorIs(t, client.CheckSchema(context.Background()), pgq.ErrNotMigrated)
}
