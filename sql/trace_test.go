package sql_test

// The W3C trace context of a dispatch, stored with its jobs and returned by the reserve
// (S105-S107).

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

const (
	parentA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	parentB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
)

// traceOfReserved reserves every ready job of queue default and returns the trace
// context each comes back with, by uuid ("" for none).
func traceOfReserved(t *testing.T, db *pgqtest.DB) map[uuid.UUID][2]string {
	t.Helper()
	rows, err := db.Pool.Query(ctx, `SELECT uuid, coalesce(traceparent, ''), coalesce(tracestate, '')
		FROM pgq.reserve('w', '{default}', 10000) WHERE pickup IS NULL`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[uuid.UUID][2]string{}
	for rows.Next() {
		var u uuid.UUID
		var tp, ts string
		require.NoError(t, rows.Scan(&u, &tp, &ts))
		out[u] = [2]string{tp, ts}
	}
	require.NoError(t, rows.Err())
	return out
}

// S105: the option traceparent (with tracestate) or, when it is not given, the settings
// pgq.traceparent and pgq.tracestate of the dispatching transaction are stored with
// every job, as rows and as loads alike, and the reserve hands them to the worker. A
// dispatch with neither stores none; the option wins over the setting.
func TestS105DispatchStoresTheTraceContext(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 100)

	byOption := pgqtest.Scalar[uuid.UUID](t, db,
		`SELECT pgq.dispatch('a', traceparent => $1, tracestate => 'vendor=x1,other=y')`, parentA)
	plain := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch('a')`)

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT set_config('pgq.traceparent', $1, true), set_config('pgq.tracestate', 'k=v', true)`, parentB)
	require.NoError(t, err)
	var bySetting, overridden uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch('a')`).Scan(&bySetting))
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch('a', traceparent => $1)`, parentA).Scan(&overridden))
	var loaded []uuid.UUID // 150 payloads: a load (pgq.load_min 100)
	require.NoError(t, tx.QueryRow(ctx,
		`SELECT array_agg(u) FROM pgq.dispatch_many('a', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 150) i)) u`).
		Scan(&loaded))
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads WHERE traceparent = $1`, parentB),
		"a load keeps the context once per chunk")

	// After the transaction the setting is gone: nothing is stored.
	after := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch('a')`)

	got := traceOfReserved(t, db)
	require.Equal(t, [2]string{parentA, "vendor=x1,other=y"}, got[byOption])
	require.Equal(t, [2]string{"", ""}, got[plain])
	require.Equal(t, [2]string{parentB, "k=v"}, got[bySetting])
	require.Equal(t, [2]string{parentA, ""}, got[overridden], "the option wins; its tracestate is the option's")
	require.Equal(t, [2]string{"", ""}, got[after])
	require.Len(t, loaded, 150)
	for _, u := range loaded {
		require.Equal(t, [2]string{parentB, "k=v"}, got[u], "job %s of the load", u)
	}
	require.Equal(t, 155, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE reserved_at IS NOT NULL`))
	require.Equal(t, 151, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE traceparent = $1`, parentB))
}

// S106: an invalid traceparent or tracestate, as an option or a setting, is refused
// with 22023 naming the value, and the dispatch writes nothing.
func TestS106InvalidTraceContextIsRefused(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for name, c := range map[string]struct{ parent, state, setting, want string }{
		"VersionNot00":   {parent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", want: "01-4bf92f"},
		"UpperCase":      {parent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", want: "00-4BF92F"},
		"ZeroTraceID":    {parent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01", want: "00-00000000"},
		"ZeroSpanID":     {parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", want: "0000000000000000-01"},
		"Short":          {parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", want: "00f067aa0ba902b7'"},
		"StateAlone":     {state: "k=v", want: "'k=v'"},
		"BadState":       {parent: parentA, state: "Key=v", want: "'Key=v'"},
		"StateWithComma": {parent: parentA, state: "k=a=b", want: "'k=a=b'"},
		"BadSetting":     {setting: "garbage", want: "setting pgq.traceparent"},
	} {
		t.Run(name, func(t *testing.T) {
			tx, err := db.Pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			if c.setting != "" {
				_, err = tx.Exec(ctx, `SELECT set_config('pgq.traceparent', $1, true)`, c.setting)
				require.NoError(t, err)
			}
			_, err = tx.Exec(ctx, `SELECT pgq.dispatch('a', traceparent => nullif($1, ''), tracestate => nullif($2, ''))`,
				c.parent, c.state)
			e := pgError(t, err)
			require.Equal(t, "22023", e.Code)
			require.Contains(t, e.Message, c.want)
		})
	}
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
}

// S107: every step of a chain carries the trace context of the chain's dispatch (its
// options, or the transaction's settings), a later one too, which a worker's
// transaction queues; every member of a batch carries the batch's.
func TestS107ChainStepsAndBatchMembersCarryTheDispatchContext(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT set_config('pgq.traceparent', $1, true)`, parentA)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "one"}, {"job": "two"}]')`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch_batch('[{"job": "m"}, {"job": "m"}, {"chain": [{"job": "c1"}]}]')`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 4, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE traceparent = $1`, parentA))

	// The option form, outside any transaction of the caller's.
	pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_chain('[{"job": "o1"}, {"job": "o2"}]', traceparent => $1, tracestate => 'k=v')`, parentB)
	pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "om"}, {"chain": [{"job": "oc"}]}]', traceparent => $1)`, parentB)
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE traceparent = $1`, parentB))
	require.Equal(t, "k=v", pgqtest.Scalar[string](t, db, `SELECT tracestate FROM pgq.jobs WHERE job = 'o1'`))
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "o1"}]', traceparent => 'bad')`)
	require.Equal(t, "22023", pgError(t, err).Code)

	jobs := reserve(t, db, "w1", clock())
	require.Len(t, jobs, 7)
	for _, j := range jobs {
		require.True(t, complete(t, db, j))
	}
	require.Equal(t, parentA, pgqtest.Scalar[string](t, db, `SELECT traceparent FROM pgq.jobs WHERE job = 'two'`))
	require.Equal(t, parentB, pgqtest.Scalar[string](t, db, `SELECT traceparent FROM pgq.jobs WHERE job = 'o2'`))
	require.Equal(t, "k=v", pgqtest.Scalar[string](t, db, `SELECT tracestate FROM pgq.jobs WHERE job = 'o2'`))
}
