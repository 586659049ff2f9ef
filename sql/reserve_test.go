package sql_test

// Tests of the reserve path's shape (migration 00003): the set-based fast path and the
// per-row pickup checks share one batch, and job uuids are time-ordered.

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// A batch that mixes plain jobs with a job that needs a pickup check (here an
// until-processing unique lock) keeps queue order: the checked job is not overtaken by
// the plain jobs behind it, and it is reserved and released like the others.
func TestReserveMixedBatchKeepsOrder(t *testing.T) {
	db := pgqtest.New(t)
	first := dispatch(t, db, `'a', '{}'`)
	checked := dispatch(t, db, `'b', '{}', unique_key => 'k', unique_until => 'processing'`)
	last := dispatch(t, db, `'c', '{}'`)
	now := time.Now().Add(time.Second)

	rows, err := db.Pool.Query(ctx, `SELECT uuid FROM pgq.reserve('w1', '{default}', 2, 1, $1) WHERE pickup IS NULL`, now)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{first, checked}, got, "the two oldest jobs, the checked one included")
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.unique_locks`),
		"the until-processing lock went when its job was handed over (S23)")
	require.Equal(t, last, reserveOne(t, db, now).UUID)
}

// Job uuids are version 7: their first 48 bits are the dispatch time in milliseconds, so
// later dispatches sort after earlier ones and index entries go in at the right edge.
// (Dispatches with a unique or debounce key take dispatch_many's per-row path; it draws
// v7 uuids too since migration 00004.)
func TestJobUUIDsAreTimeOrdered(t *testing.T) {
	db := pgqtest.New(t)
	var ids []uuid.UUID
	for _, args := range []string{`'a', '{}'`, `'a', '{}', unique_key => 'k'`, `'a', '{}', debounce_key => 'k', debounce_for => '0 s'`} {
		ids = append(ids, dispatch(t, db, args))
		time.Sleep(2 * time.Millisecond)
	}
	for i, id := range ids {
		require.Equal(t, uuid.Version(7), id.Version(), "uuid %s", id)
		require.Equal(t, uuid.RFC4122, id.Variant())
		ms := int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5])
		require.WithinDuration(t, time.Now(), time.UnixMilli(ms), time.Minute)
		if i > 0 {
			require.Less(t, ids[i-1].String(), id.String(), "later dispatches sort after earlier ones")
		}
	}
}

// One dispatch_many draws its uuids in one call (pgq._uuid7s): distinct, version 7, and
// counting up in payload order, which is also the order of the jobs' ids (FIFO within
// the batch). The uuids are made before the insert and returned without RETURNING, so
// the test also checks that each returned uuid is the row of its payload.
func TestJobUUIDsOfOneDispatchManyCountUpInPayloadOrder(t *testing.T) {
	db := pgqtest.New(t)
	got := pgqtest.Scalar[[]uuid.UUID](t, db,
		`SELECT array_agg(u) FROM pgq.dispatch_many('a', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 2000) i)) u`)
	require.Len(t, got, 2000)
	// pgq.ready: the jobs are rows or, kept as a load, chunks (S85).
	inTable := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(uuid ORDER BY (payload->>'n')::int) FROM pgq.ready`)
	require.Equal(t, got, inTable, "the i-th uuid returned is the job of the i-th payload")
	byID := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(uuid ORDER BY id) FROM pgq.ready`)
	require.Equal(t, got, byID, "ids follow payload order")
	for i, id := range got {
		require.Equal(t, uuid.Version(7), id.Version(), "uuid %s", id)
		require.Equal(t, uuid.RFC4122, id.Variant())
		if i > 0 {
			require.Equal(t, got[0][:10], id[:10], "one call shares its time and random prefix")
			// the last 48 bits count up by one, modulo 2^48
			prev, cur := got[i-1][10:], id[10:]
			p, c := uint64(0), uint64(0)
			for k := range 6 {
				p, c = p<<8|uint64(prev[k]), c<<8|uint64(cur[k])
			}
			require.Equal(t, (p+1)&(1<<48-1), c, "uuid %d follows uuid %d", i, i-1)
		}
	}
}

// Lease tokens (S15 fencing) are built from one random base per reserve call and the
// job's id: distinct within a call, and new on every reservation of the same job.
func TestS15LeaseTokensAreFreshPerReservation(t *testing.T) {
	db := pgqtest.New(t)
	for range 3 {
		dispatch(t, db, `'a', '{}', tries => 3`)
	}
	now := time.Now().Add(time.Second)
	first := reserve(t, db, "w1", now)
	require.Len(t, first, 3)
	seen := map[uuid.UUID]bool{}
	for _, r := range first {
		require.False(t, seen[r.Token], "token %s given twice in one call", r.Token)
		seen[r.Token] = true
	}
	// released, the same jobs are reserved again, each with a token never seen
	for _, r := range first {
		release(t, db, r, 0, now)
	}
	again := reserve(t, db, "w2", now.Add(time.Second))
	require.Len(t, again, 3)
	for _, r := range again {
		require.False(t, seen[r.Token], "token %s reused for job %s", r.Token, r.UUID)
		seen[r.Token] = true
	}
}
