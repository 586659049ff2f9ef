package sql_test

// S80: the slots of pgq.jobs. With the xmin horizon held, the table stays bounded by
// truncating slots whose jobs have all ended; no job is ever lost to a truncation, and
// the calls of the worker protocol find their jobs in whichever slot they are.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// slotStates is the state of each slot, in slot order.
func slotStates(t *testing.T, db *pgqtest.DB) []string {
	t.Helper()
	return pgqtest.Scalar[[]string](t, db, `SELECT array_agg(state ORDER BY slot) FROM pgq.job_slots`)
}

// rotate calls pgq.rotate with slot size bytes and returns what it did. Each call is a
// minute after the one before: a draining slot that was busy is looked at again.
func rotate(t *testing.T, db *pgqtest.DB, bytes int) []string {
	t.Helper()
	return pgqtest.Scalar[[]string](t, db, `SELECT pgq.rotate($1, as_of => now() + $2::int * interval '1 minute')`,
		bytes, rotations.Add(1))
}

var rotations atomic.Int64

// jobsBytes is the size of pgq.jobs: every slot, with its indexes.
func jobsBytes(t *testing.T, db *pgqtest.DB) int64 {
	t.Helper()
	return pgqtest.Scalar[int64](t, db, `SELECT sum(bytes)::bigint FROM pgq.job_storage`)
}

// runAll reserves and completes every job due at at, on c, as a worker does.
func runAll(t *testing.T, db *pgqtest.DB, c *pgx.Conn, at time.Time) int {
	t.Helper()
	n := 0
	for {
		rows, err := c.Query(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w', '{default}', 500, 1, $1) WHERE pickup IS NULL`, at)
		require.NoError(t, err)
		var ids, tokens []uuid.UUID
		var id, token uuid.UUID
		_, err = pgx.ForEachRow(rows, []any{&id, &token}, func() error {
			ids, tokens = append(ids, id), append(tokens, token)
			return nil
		})
		require.NoError(t, err)
		if len(ids) == 0 {
			return n
		}
		require.Equal(t, len(ids), pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.complete($1, $2)`, ids, tokens))
		n += len(ids)
	}
}

// While an idle transaction holds the xmin horizon, no vacuum can remove the versions
// the jobs leave; with pgq.rotate called between rounds, pgq.jobs stays within four slot
// sizes however many jobs run. The check can fail: the same load without the calls
// grows the table past it.
func TestS80HeldHorizonCannotGrowTheTable(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	hold, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(ctx)
	require.NoError(t, hold.QueryRow(ctx, `SELECT pg_current_xact_id()`).Scan(new(any)))

	const slot = 512 << 10
	s := session(t, db)
	var largest int64
	truncated := 0
	// round runs 200 jobs (about 120 kB of row versions the hold keeps), then calls
	// pgq.rotate twice, as the worker does each second.
	round := func(rotating bool) {
		db.Exec(t, `SELECT pgq.dispatch_many('j', array_agg('{"n": 1}'::jsonb)) FROM generate_series(1, 200)`)
		require.Equal(t, 200, runAll(t, db, s, clock()))
		largest = max(largest, jobsBytes(t, db))
		if rotating {
			for range 2 {
				for _, d := range rotate(t, db, slot) {
					if strings.Contains(d, "truncated") {
						truncated++
					}
				}
			}
		}
	}
	for range 150 {
		round(true)
	}
	t.Logf("30,000 jobs under a held horizon, slots of %d kB: pgq.jobs at most %d kB; %d truncations", slot>>10, largest>>10, truncated)
	require.LessOrEqual(t, largest, int64(4*slot), "pgq.jobs stays within four slots")
	require.Greater(t, truncated, 5, "slots were truncated")
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
	require.Equal(t, 30000, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`),
		"every job ran once")

	for range 50 {
		round(false)
	}
	t.Logf("10,000 more without pgq.rotate: %d kB", jobsBytes(t, db)>>10)
	require.Greater(t, jobsBytes(t, db), int64(4*slot), "without the truncations the table grows past the bound")
}

// pgq.rotate refuses a slot size below 64 KiB but 0, and does nothing while another
// call runs.
func TestS80RotateChecksItsArgumentAndRunsOneAtATime(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for _, bad := range []string{"NULL", "-1", "65535"} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.rotate(`+bad+`)`)
		require.Equal(t, "22023", pgCode(err), bad)
		require.ErrorContains(t, err, "rotate slot_bytes must be 0 or at least 65536", bad)
	}
	dispatch(t, db, `'x', '{}'`)
	other, err := session(t, db).Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(ctx)
	require.Len(t, scalarOn[[]string](t, other, `SELECT pgq.rotate(65536)`), 1, "the current slot is full")
	require.Empty(t, rotate(t, db, 65536), "another call holds the rotation")
	require.NoError(t, other.Rollback(ctx))
	require.Len(t, rotate(t, db, 65536), 1)
}

// A slot is truncated only when no job is left in it: not while a job dispatched to it
// is uncommitted, not while a job runs in it, not when a transaction wrote it after it
// was found empty.
func TestS80NoLiveJobIsTruncated(t *testing.T) {
	t.Parallel()

	t.Run("UncommittedDispatch", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		producer, err := session(t, db).Begin(ctx)
		require.NoError(t, err)
		var id uuid.UUID
		require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('late', '{}')`).Scan(&id))
		require.Len(t, rotate(t, db, 65536), 1, "slot 0 is full at once: slot 1 takes new jobs")
		require.Equal(t, []string{"draining", "current", "empty", "empty"}, slotStates(t, db))
		for range 3 {
			require.Empty(t, rotate(t, db, 1<<30), "slot 0 looks empty, but the producer holds a lock on it")
		}
		require.NoError(t, producer.Commit(ctx))
		require.Equal(t, []string{"draining", "current", "empty", "empty"}, slotStates(t, db))
		got := reserveOne(t, db, clock())
		require.Equal(t, id, got.UUID)
		require.True(t, complete(t, db, got))
		require.Contains(t, strings.Join(rotate(t, db, 1<<30), "\n"), "slot 0 truncated")
	})

	t.Run("OpenReader", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		dispatch(t, db, `'x', '{}'`)
		require.True(t, complete(t, db, reserveOne(t, db, clock())))
		rotate(t, db, 65536)
		reader, err := session(t, db).Begin(ctx)
		require.NoError(t, err)
		require.Zero(t, scalarOn[int](t, reader, `SELECT count(*)::int FROM pgq.ready`), "a psql session that looked, and stays open")
		var said []string
		for range 8 {
			said = append(said, rotate(t, db, 1<<30)...)
		}
		require.Equal(t, []string{"draining", "current", "empty", "empty"}, slotStates(t, db))
		require.Len(t, said, 1, "said once")
		require.Contains(t, said[0], "slot 0 has no job left but could not be truncated")
		require.NoError(t, reader.Rollback(ctx))
		require.Contains(t, strings.Join(rotate(t, db, 1<<30), "\n"), "slot 0 truncated")
	})

	t.Run("RunningJob", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		dispatch(t, db, `'long', '{}'`)
		running := reserveOne(t, db, clock())
		rotate(t, db, 65536)
		for range 3 {
			require.Empty(t, rotate(t, db, 1<<30), "its job runs")
		}
		held := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(h) FROM pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid]) h`, running.UUID, running.Token)
		require.Equal(t, []uuid.UUID{running.Token}, held, "the heartbeat finds the job in its draining slot")
		require.True(t, complete(t, db, running))
		require.Contains(t, strings.Join(rotate(t, db, 1<<30), "\n"), "slot 0 truncated")
		require.Equal(t, []string{"empty", "current", "empty", "empty"}, slotStates(t, db))
	})

	t.Run("WrittenAfterTheCheck", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		c := session(t, db)
		var before string
		require.NoError(t, c.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&before))
		writtenSince := func(snap string) bool {
			return pgqtest.Scalar[bool](t, db, `SELECT pgq._slot_written_since(0::smallint, $1::pg_snapshot)`, snap)
		}
		require.False(t, writtenSince(before))
		dispatch(t, db, `'x', '{}'`)
		require.True(t, writtenSince(before), "a dispatch committed after the snapshot")
		var after string
		require.NoError(t, c.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&after))
		require.False(t, writtenSince(after))
		running := reserveOne(t, db, clock())
		require.True(t, writtenSince(after), "a reservation committed after the snapshot")
		require.NoError(t, c.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&after))
		pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(h) FROM pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid]) h`, running.UUID, running.Token)
		require.True(t, writtenSince(after), "a heartbeat committed after the snapshot")
		require.NoError(t, c.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&after))
		release(t, db, running, 0, clock())
		require.True(t, writtenSince(after), "a release committed after the snapshot")
	})
}

// The worker protocol finds jobs in every slot: one reserve takes jobs of several slots
// in priority and dispatch order, each token names its job's slot, and complete,
// heartbeat and fail find them there.
func TestS80ProtocolAcrossSlots(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	var want []uuid.UUID
	for i := range 3 {
		want = append(want, dispatch(t, db, `'j', '{}', priority => 5`))
		want = append(want, dispatch(t, db, `'j', '{}'`))
		if i < 2 {
			rotate(t, db, 65536) // the next two go to the next slot
		}
	}
	require.Equal(t, []int{2, 2, 2}, pgqtest.Scalar[[]int](t, db, `SELECT array_agg(n ORDER BY slot) FROM (SELECT slot, count(*)::int n FROM pgq.jobs GROUP BY slot) s`))
	// Priority first, then dispatch order, whatever the slot.
	want = []uuid.UUID{want[0], want[2], want[4], want[1], want[3], want[5]}

	var got, tokens []uuid.UUID
	rows, err := db.Pool.Query(ctx, `SELECT r.uuid, r.lease_token, pgq._token_slot(r.lease_token) = j.slot
		FROM pgq.reserve('w', '{default}', 10) WITH ORDINALITY r JOIN pgq.jobs j ON j.uuid = r.uuid
		WHERE r.pickup IS NULL ORDER BY r.ordinality`)
	require.NoError(t, err)
	var named bool
	var id, token uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&id, &token, &named}, func() error {
		got, tokens = append(got, id), append(tokens, token)
		require.True(t, named, "the token of %s names its slot", id)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, want, got, "one reserve, in priority and dispatch order across the slots")

	require.ElementsMatch(t, tokens, pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(h) FROM pgq.heartbeat($1, $2) h`, got, tokens))
	require.NotNil(t, fail(t, db, reserved{UUID: got[0], Token: tokens[0]}, "boom", false, clock()), "fail finds its job")
	require.Equal(t, 5, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.complete($1, $2)`, got[1:], tokens[1:]))
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
}

// When no slot is empty, the few jobs that wait long in the oldest draining slot (here
// a delay) move to the current one, as they were, and the slot is truncated; the job
// then runs as it would have, and a session whose marks are past it finds it (S77).
func TestS77S80WaitingJobsMoveWhenNoSlotIsEmpty(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	s := session(t, db)
	var delayed []uuid.UUID
	for range 3 {
		delayed = append(delayed, dispatch(t, db, `'later', '{"n": 1}', delay => '1 hour', tries => 3`))
		runAll(t, db, s, clock()) // the session's marks
		rotate(t, db, 65536)
	}
	require.Equal(t, []string{"draining", "draining", "draining", "current"}, slotStates(t, db))
	dispatch(t, db, `'now', '{}'`) // fills slot 3 past 64 kB

	done := strings.Join(rotate(t, db, 65536), "\n")
	require.Contains(t, done, "1 waiting jobs moved from slot 0 to slot 3")
	require.Equal(t, int16(3), pgqtest.Scalar[int16](t, db, `SELECT slot FROM pgq.jobs WHERE uuid = $1`, delayed[0]))
	require.Equal(t, []string{"later", "3", "dispatched", `{"n": 1}`}, pgqtest.Scalar[[]string](t, db,
		`SELECT ARRAY[job, tries::text, wait_reason, payload::text] FROM pgq.jobs WHERE uuid = $1`, delayed[0]), "as it was")
	require.Contains(t, strings.Join(rotate(t, db, 65536), "\n"), "slot 0 truncated")

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now($1)`, delayed[0]))
	got := reserveOn(t, s, "w", clock())
	require.Len(t, got, 2, "the session's marks are past neither the moved job nor the one just dispatched")
	require.Contains(t, []uuid.UUID{got[0].UUID, got[1].UUID}, delayed[0])
	for _, j := range got {
		require.True(t, complete(t, db, reserved{UUID: j.UUID, Token: *j.Token}))
	}
	require.Equal(t, []string{"succeeded"}, outcomes(t, db, delayed[0]), "no attempt was used by the move")
}

// pgq.run_now and pgq.cancel that wait for a job pgq.rotate is moving find it where it
// went, instead of answering that it does not exist.
func TestS80OperationsFindAJobBeingMoved(t *testing.T) {
	t.Parallel()
	for _, op := range []struct{ name, sql, want string }{
		{"RunNow", `SELECT pgq.run_now($1)::text`, "true"},
		{"Cancel", `SELECT pgq.cancel($1)`, "cancelled"},
	} {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			id := dispatch(t, db, `'later', '{}', delay => '1 hour'`)
			mover, err := session(t, db).Begin(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, scalarOn[int](t, mover, `SELECT pgq._move_waiting(0::smallint, 1::smallint, 10)`))

			var wg sync.WaitGroup
			var got string
			var opErr error
			opConn := session(t, db)
			wg.Go(func() { opErr = opConn.QueryRow(context.Background(), op.sql, id).Scan(&got) })
			require.Eventually(t, func() bool {
				return pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%')`, op.sql[7:20])
			}, 10*time.Second, 10*time.Millisecond, "the operation waits for the mover")
			require.NoError(t, mover.Commit(ctx))
			wg.Wait()
			require.NoError(t, opErr)
			require.Equal(t, op.want, got)
		})
	}
}

// A SQL handler's transaction locks its own job's slot only: while it runs, pgq.rotate
// truncates a drained slot. The session has run handlers before, past plpgsql's five
// custom plans: a generic plan would lock every slot.
func TestS80SQLHandlerLocksOnlyItsSlot(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.sleepy(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep((payload ->> 's')::float) $$`)
	db.Exec(t, `SELECT pgq.define_job('sleepy', handler => 'public.sleepy')`)
	handler := session(t, db)
	runSQL := func(j reserved) error {
		_, err := handler.Exec(context.Background(), `SELECT pgq.run_sql_job($1, $2)`, j.UUID, j.Token)
		return err
	}
	for range 8 {
		dispatch(t, db, `'sleepy', '{"s": 0}'`)
		require.NoError(t, runSQL(reserveOne(t, db, clock())))
	}
	dispatch(t, db, `'first', '{}'`)
	first := reserveOne(t, db, clock())
	rotate(t, db, 65536) // slot 0 drains; its one job runs
	dispatch(t, db, `'sleepy', '{"s": 2}'`)
	job := reserveOne(t, db, clock())
	require.Equal(t, int16(1), pgqtest.Scalar[int16](t, db, `SELECT slot FROM pgq.jobs WHERE uuid = $1`, job.UUID))

	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = runSQL(job) })
	require.Eventually(t, func() bool {
		return pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'PgSleep')`)
	}, 10*time.Second, 10*time.Millisecond)
	require.True(t, complete(t, db, first))
	require.Contains(t, strings.Join(rotate(t, db, 1<<30), "\n"), "slot 0 truncated", "while the handler runs")
	wg.Wait()
	require.NoError(t, runErr)
	require.Equal(t, []string{"succeeded"}, outcomes(t, db, job.UUID))
}

// scalarOn is pgqtest.Scalar on a transaction.
func scalarOn[T any](t *testing.T, tx pgx.Tx, sql string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, tx.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}
