package sql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// liveLeaseDuplicates counts the overlap keys with more than one live lease: at most one
// job holds a key, whichever generation its lease is in (S26, S81).
const liveLeaseDuplicates = `(SELECT o.key FROM pgq.overlap_locks o WHERE o.expires_at > now()
                              GROUP BY o.key HAVING count(*) > 1) d`

// S81: overlap leases live in generations that pgq.rotate truncates in turn. Under a
// held xmin horizon, eight keys leased 60 times each: the generations without a live
// lease are truncated and reused, the one holding a long job's lease is left alone
// and keeps that key held, and a probe of a reused key reads a few pages, not one per
// earlier lease of it.
func TestS81OverlapLeasesUnderAHeldHorizon(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('o', tries => 0, middleware => '[{"without_overlapping": {"by": ["k"]}}]')`)
	hold, err := db.Pool.Begin(ctx) // from here on no vacuum or pruning removes a version
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)

	w := session(t, db)
	long := dispatch(t, db, `'o', '{"k": "long"}'`)
	held := runnable(reserveOn(t, w, "w", clock()))
	require.Len(t, held, 1)
	longGen := pgqtest.Scalar[int16](t, db, `SELECT gen FROM pgq.overlap_locks WHERE key = 'o:["long"]'`)
	filenodes := func() map[int16]uint32 {
		rows, err := db.Pool.Query(ctx, `SELECT gen, pg_relation_filenode(partition)::bigint FROM pgq.overlap_gens`)
		require.NoError(t, err)
		out := map[int16]uint32{}
		for rows.Next() {
			var gen int16
			var node int64
			require.NoError(t, rows.Scan(&gen, &node))
			out[gen] = uint32(node)
		}
		require.NoError(t, rows.Err())
		return out
	}
	before := filenodes()

	for round := range 60 {
		db.Exec(t, `SELECT pgq.dispatch_many('o', array_agg(jsonb_build_object('k', g))) FROM generate_series(1, 8) g`)
		got := runnable(reserveOn(t, w, "w", clock()))
		require.Len(t, got, 8, "round %d", round)
		for _, j := range got {
			require.Equal(t, 1, count(t, db, "pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])", j.UUID, *j.Token))
		}
		// the long job's worker renews its leases, as it would every second
		require.Equal(t, 1, count(t, db, "pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid], $3)", long, *held[0].Token, clock()))
		db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536)`)
		require.Zero(t, count(t, db, liveLeaseDuplicates), "round %d", round)
	}

	after := filenodes()
	for gen, node := range before {
		if gen == longGen {
			require.Equal(t, node, after[gen], "generation %d holds the long job's live lease: not truncated", gen)
		} else {
			require.NotEqual(t, node, after[gen], "generation %d was truncated during the hold", gen)
		}
	}
	_, err = w.Exec(ctx, `SET enable_seqscan = off`)
	require.NoError(t, err)
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	var raw string
	require.NoError(t, w.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM pgq.overlap_locks WHERE key = 'o:[1]'`).Scan(&raw))
	require.NoError(t, json.Unmarshal([]byte(raw), &plan))
	require.Less(t, plan[0].Plan.Hit+plan[0].Plan.Read, 30, "a probe of a key leased 60 times under the hold")

	// The long job's key is still held, from its old generation; its outcome ends the
	// lease there, and the key is free again.
	next := dispatch(t, db, `'o', '{"k": "long"}'`)
	got := reserveOn(t, w, "w", clock())
	require.Len(t, got, 1)
	require.Equal(t, "turned_away", *got[0].Pickup)
	require.Equal(t, 1, count(t, db, "pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])", long, *held[0].Token))
	got = runnable(reserveOn(t, w, "w", clock()))
	require.Len(t, got, 1)
	require.Equal(t, next, got[0].UUID)
	require.NotEqual(t, longGen, pgqtest.Scalar[int16](t, db, `SELECT gen FROM pgq.overlap_locks WHERE key = 'o:["long"]' AND expires_at > now()`),
		"the new lease is in the current generation")
}

// S26, S81 under concurrency: four workers take and end leases of six keys while a
// fifth connection turns the generations over as fast as it can. A running table with
// the key as its primary key stands for the handlers: a worker inserts its job's key
// after the reserve commits and deletes it before the completion, so two jobs of one key
// running at once would fail an insert.
func TestS26S81OneHolderAcrossGenerations(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('o', tries => 0, middleware => '[{"without_overlapping": {"by": ["k"], "release_after": 0}}]')`)
	db.Exec(t, `CREATE TABLE running (key text PRIMARY KEY)`)
	db.Exec(t, `SELECT pgq.dispatch_many('o', array_agg(jsonb_build_object('k', g % 6))) FROM generate_series(1, 600) g`)

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var done, rotations atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	rotator := session(t, db)
	workers := []*pgx.Conn{session(t, db), session(t, db), session(t, db), session(t, db)}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var lines []string
			if err := rotator.QueryRow(ctx, `SELECT pgq.rotate(slot_bytes => 65536)`).Scan(&lines); err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			rotations.Add(int64(len(lines)))
			time.Sleep(5 * time.Millisecond)
		}
	})
	errs := make(chan error, len(workers))
	for w, c := range workers {
		wg.Go(func() {
			worker := fmt.Sprintf("w%d", w)
			for done.Load() < 600 && ctx.Err() == nil {
				var jobs []picked
				rows, err := c.Query(ctx, `SELECT uuid, lease_token, pickup, pickup_note, overlap_keys FROM pgq.reserve($1, '{default}', 3, 1)`, worker)
				if err == nil {
					jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (picked, error) {
						var p picked
						return p, r.Scan(&p.UUID, &p.Token, &p.Pickup, &p.Note, &p.Overlap)
					})
				}
				if err != nil {
					errs <- err
					return
				}
				for _, j := range runnable(jobs) {
					if _, err := c.Exec(ctx, `INSERT INTO running VALUES ($1)`, j.Overlap[0]); err != nil {
						var pgErr *pgconn.PgError
						if errors.As(err, &pgErr) && pgErr.Code == "23505" {
							err = fmt.Errorf("two jobs of key %s run at once", j.Overlap[0])
						}
						errs <- err
						return
					}
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the handler
					if _, err := c.Exec(ctx, `DELETE FROM running WHERE key = $1`, j.Overlap[0]); err != nil {
						errs <- err
						return
					}
					if _, err := c.Exec(ctx, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, j.UUID, *j.Token); err != nil {
						errs <- err
						return
					}
					done.Add(1)
				}
			}
		})
	}
	for done.Load() < 600 && ctx.Err() == nil && len(errs) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				t.Logf("detail: %s\nwhere: %s", pgErr.Detail, pgErr.Where)
			}
			require.NoError(t, err)
		}
	}
	require.EqualValues(t, 600, done.Load(), "every job ran")
	require.Positive(t, rotations.Load(), "the generations turned over meanwhile")
	require.Zero(t, count(t, db, "pgq.jobs"))
}

// S81: a generation whose lock a reader holds (a transaction that read pgq.locks and
// stays open) is not truncated, and pgq.rotate asks for that lock again only 1, 2, 4, 8,
// then 10 seconds later: each wait for it holds up every statement on the leases.
func TestS81AGenerationALongReaderHoldsIsTriedLater(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('o', middleware => '[{"without_overlapping": {"by": ["k"]}}]')`)
	db.Exec(t, `SELECT pgq.dispatch_many('o', array_agg(jsonb_build_object('k', g))) FROM generate_series(1, 5) g`)
	w := session(t, db)
	for _, j := range runnable(reserveOn(t, w, "w", clock())) {
		require.Equal(t, 1, count(t, db, "pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])", j.UUID, *j.Token))
	}
	state := func() string {
		return pgqtest.Scalar[string](t, db, `SELECT string_agg(gen || ':' || state || ':' || tries, ' ' ORDER BY gen) FROM pgq.overlap_gens`)
	}
	require.Equal(t, "0:current:0 1:old:0 2:old:0", state())

	reader, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = reader.Rollback(context.Background()) }()
	_, err = reader.Exec(ctx, `SELECT count(*) FROM pgq.locks`)
	require.NoError(t, err)
	at := pgqtest.Scalar[time.Time](t, db, `SELECT now()`)
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536, as_of => $1)`, at)
	require.Equal(t, "0:current:0 1:old:1 2:old:1", state(), "both old generations' locks were not free: tried once")
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536, as_of => $1)`, at.Add(500*time.Millisecond))
	require.Equal(t, "0:current:0 1:old:1 2:old:1", state(), "not asked again within the second")

	require.NoError(t, reader.Rollback(ctx))
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536, as_of => $1)`, at.Add(2*time.Second))
	require.Equal(t, "0:old:0 1:current:0 2:old:1", state(), "the reader is gone: the oldest old generation is truncated and current")
}
