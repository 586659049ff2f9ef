package pgcodec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// registered is a connection to a fresh test database with the codecs registered.
func registered(t *testing.T) *pgxpool.Conn {
	t.Helper()
	conn, err := pgqtest.New(t).Pool.Acquire(context.Background())
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	pgcodec.Register(conn.Conn().TypeMap())
	return conn
}

// Values survive a round trip through PostgreSQL in every shape the worker uses, and
// NULL still reaches a pointer as nil.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	conn := registered(t)
	pgcodec.Register(conn.Conn().TypeMap()) // idempotent

	a, b := uuid.New(), uuid.New()
	m := conn.Conn().TypeMap()
	require.Equal(t, "pgcodec.encodeBinary", fmt.Sprintf("%T", m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, a)),
		"uuid.UUID is sent as its bytes, not through driver.Valuer")
	require.Equal(t, "pgcodec.scanBinary", fmt.Sprintf("%T", m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, &a)))
	var one uuid.UUID
	var text string
	require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid, $1::uuid::text`, a).Scan(&one, &text))
	require.Equal(t, a, one)
	require.Equal(t, a.String(), text, "PostgreSQL got the same 16 bytes")

	var many []uuid.UUID
	require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid[]`, []uuid.UUID{a, b}).Scan(&many))
	require.Equal(t, []uuid.UUID{a, b}, many)

	var some, none *uuid.UUID
	require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid, NULL::uuid`, &b).Scan(&some, &none))
	require.Equal(t, b, *some)
	require.Nil(t, none)

	var plain uuid.UUID
	err := conn.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&plain)
	require.ErrorContains(t, err, "NULL")

	// the text protocol still works (pgx falls back to uuid.UUID's own Scan)
	var viaText uuid.UUID
	require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid`, pgx.QueryExecModeSimpleProtocol, a).Scan(&viaText))
	require.Equal(t, a, viaText)
}

// jsonb reaches a json.RawMessage as the document's bytes (copied, not parsed), NULL as
// nil, and every other target through json.Unmarshal as before.
func TestJSONB(t *testing.T) {
	ctx := context.Background()
	conn := registered(t)

	rows, err := conn.Query(ctx, `SELECT p FROM unnest($1::jsonb[]) p`,
		[]json.RawMessage{json.RawMessage(`{"b": [1, 2], "a": "x"}`), json.RawMessage(`"s"`)})
	require.NoError(t, err)
	raws, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	require.NoError(t, err)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"a": "x", "b": [1, 2]}`), json.RawMessage(`"s"`)}, raws,
		"jsonb's normal form, and each row its own bytes (not the reused read buffer)")

	var none json.RawMessage
	require.NoError(t, conn.QueryRow(ctx, `SELECT NULL::jsonb`).Scan(&none))
	require.Nil(t, none)

	var decoded struct{ A string }
	require.NoError(t, conn.QueryRow(ctx, `SELECT '{"A": "y"}'::jsonb`).Scan(&decoded))
	require.Equal(t, "y", decoded.A)
	var wrong struct{ A int }
	require.Error(t, conn.QueryRow(ctx, `SELECT '{"A": "y"}'::jsonb`).Scan(&wrong), "other targets are still decoded and checked")
}

// A query sent without describing its parameters (pgx.QueryExecModeExec, as through a
// transaction pooler) still sends a uuid and a slice of them: their types come from the
// Go values.
func TestExecModeSendsUUIDs(t *testing.T) {
	ctx := context.Background()
	conn := registered(t)
	a, b := uuid.New(), uuid.New()
	var got []uuid.UUID
	var one uuid.UUID
	require.NoError(t, conn.QueryRow(ctx, `SELECT $1::uuid[], $2::uuid`, pgx.QueryExecModeExec, []uuid.UUID{a, b}, a).Scan(&got, &one))
	require.Equal(t, []uuid.UUID{a, b}, got)
	require.Equal(t, a, one)
}
