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

// S46: Migrate creates the roles under the names it is given, hands them their parts
// and records the names in pgq.roles; migrating again changes nothing; a name that is
// not a plain identifier is refused before anything runs.
func TestS46MigrateWithRolePrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgqtest.NewEmpty(t)
	roles := pgq.DefaultRoles("t17_")
	for i := 0; i < 2; i++ {
		_, err := pgq.Migrate(ctx, db.Pool, pgq.WithRoles(roles))
		require.NoError(t, err)
	}
	require.Equal(t, []string{"t17_pgq_admin", "t17_pgq_owner", "t17_pgq_payload_reader", "t17_pgq_producer", "t17_pgq_reader", "t17_pgq_worker"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(name ORDER BY name) FROM pgq.roles`))
	require.Equal(t, "t17_pgq_owner", pgqtest.Scalar[string](t, db, `SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'pgq'`))
	for role, want := range map[string]bool{
		"t17_pgq_producer": true, "t17_pgq_worker": false, "t17_pgq_admin": false,
	} {
		require.Equal(t, want, pgqtest.Scalar[bool](t, db,
			`SELECT has_function_privilege($1, 'pgq.dispatch(text, jsonb, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text)', 'EXECUTE')`, role), role)
	}
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pg_has_role('t17_pgq_admin', 't17_pgq_reader', 'MEMBER')`))
	_, err := pgq.Migrate(ctx, db.Pool, pgq.WithRoles(pgq.DefaultRoles("Bad-")))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
}
