package sql_test

// Fair queues (S114-S120): a queue defined with fair_by takes its jobs round-robin
// across the values of a payload field.

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// fairQueue makes the queue 'exports' fair by tenant.
func fairQueue(t *testing.T, db *pgqtest.DB) {
	t.Helper()
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
}

// dispatchTenant dispatches n jobs of tenant to 'exports' in one call, numbered from
// 1, at priority prio.
func dispatchTenant(t *testing.T, db *pgqtest.DB, tenant string, n, prio int) {
	t.Helper()
	db.Exec(t, `SELECT pgq.dispatch_many('export',
	    ARRAY(SELECT jsonb_build_object('tenant', $1::text, 'n', i) FROM generate_series(1, $2::int) i),
	    queue => 'exports', priority => $3::int)`, tenant, n, prio)
}

// statsConn is what statCount needs of a connection: a pool's or a plain one.
type statsConn interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// statCount flushes c's own statistics and returns the count that query reads from
// them.
func statCount(t *testing.T, c statsConn, query string) int {
	t.Helper()
	_, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
	require.NoError(t, err)
	var n int
	require.NoError(t, c.QueryRow(ctx, query).Scan(&n))
	return n
}

// turnReads is how many index entries and rows of pgq.fair_turns the statistics count
// as read (S123, S125).
func turnReads(t *testing.T, c statsConn) int {
	t.Helper()
	return statCount(t, c, `
		SELECT (SELECT coalesce(sum(idx_tup_read), 0)::int FROM pg_stat_user_indexes WHERE relid = 'pgq.fair_turns'::regclass)
		     + (SELECT coalesce(seq_tup_read, 0)::int FROM pg_stat_user_tables WHERE relid = 'pgq.fair_turns'::regclass)`)
}

// taken is a job a reserve took: its tenant and number.
type taken struct {
	Tenant string
	N      int
}

// reserveFairOn reserves up to max jobs of 'exports' on c as worker, in the order reserve
// gave them.
func reserveFairOn(t testing.TB, c *pgx.Conn, worker string, max int) ([]taken, error) {
	rows, err := c.Query(ctx, `SELECT coalesce(payload->>'tenant', ''), coalesce((payload->>'n')::int, 0)
	                           FROM pgq.reserve($1, '{exports}', $2) WHERE pickup IS NULL`, worker, max)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (taken, error) {
		var j taken
		return j, r.Scan(&j.Tenant, &j.N)
	})
}

// indexFetches is how many rows of pgq.jobs's partitions the session c has fetched
// through indexes, as flushed to the statistics by the statement before.
func indexFetches(t *testing.T, c statsConn) int {
	t.Helper()
	return statCount(t, c, `SELECT coalesce(sum(idx_tup_fetch), 0)::int FROM pg_stat_user_tables
		WHERE schemaname = 'pgq' AND relname ~ '^jobs_[0-9]+$'`)
}

// reserveTenants reserves up to max jobs of 'exports' on a connection of db's pool.
func reserveTenants(t *testing.T, db *pgqtest.DB, max int) []taken {
	t.Helper()
	c, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	got, err := reserveFairOn(t, c.Conn(), "w1", max)
	require.NoError(t, err)
	return got
}

// S114: the key is the payload's fair_by field as text (” when it has none); a fair queue's
// jobs are rows even in bulk (no loads), and redefining the queue keys its live jobs
// anew.
func TestS114FairQueueKeysJobsByPayloadField(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 100)
	require.Equal(t, "queue exports: retry_after 90 s, fair by tenant",
		pgqtest.Scalar[string](t, db, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`))
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "acme"}', queue => 'exports')`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": 42}', queue => 'exports')`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"other": 1}', queue => 'exports')`)
	dispatchTenant(t, db, "bulk", 1000, 0)
	require.Equal(t, []string{"", "42", "acme", "bulk"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(DISTINCT fair_key ORDER BY fair_key) FROM pgq.jobs`))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`),
		"a bulk dispatch into a fair queue is stored as rows")
	require.Equal(t, 1003, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE fair_key IS NOT NULL`))
	require.Equal(t, 4, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns`), "a turn per key")

	// Another queue keeps loads and no keys.
	db.Exec(t, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', 't') FROM generate_series(1, 1000)))`)
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`))

	// No longer fair: no keys, no turns; fair again by another field: keyed anew.
	db.Exec(t, `SELECT pgq.define_queue('exports')`)
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE fair_key IS NOT NULL`))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns`))
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'other')`)
	require.Equal(t, []string{"", "1"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(DISTINCT fair_key ORDER BY fair_key) FROM pgq.jobs WHERE queue = 'exports'`))
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns`))

	_, err := db.Pool.Exec(ctx, `SELECT pgq.define_queue('exports', fair_by => '')`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22023", pgErr.Code)
}

// tenants lists the tenants of jobs, in order.
func tenants(jobs []taken) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Tenant
	}
	return out
}

// S115: a key with one waiting job waits at most one turn behind a key with 10,000: reserved
// one at a time, at most one job of the big key comes before it, however far the big
// key's backlog has been drained; and a batch reserve takes it in its first round.
func TestS115OneJobWaitsAtMostOneTurn(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 10000, 0)
	bigTaken := 0
	for round := range 3 {
		for range 50 * round {
			require.Equal(t, []string{"big"}, tenants(reserveTenants(t, db, 1)))
			bigTaken++
		}
		db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'small', 'n', $1::int), queue => 'exports')`, round)
		var before int
		for {
			got := reserveTenants(t, db, 1)
			require.Len(t, got, 1)
			if got[0].Tenant == "small" {
				break
			}
			before++
		}
		require.LessOrEqual(t, before, 1, "round %d: the small key waited at most one turn", round)
		bigTaken += before
	}
	// Fifty keys with a job each, then a reserve of 60: all fifty are in it.
	for k := range 50 {
		dispatchTenant(t, db, fmt.Sprint("k", k), 1, 0)
	}
	got := tenants(reserveTenants(t, db, 60))
	require.Len(t, got, 60)
	small := 0
	for _, tenant := range got {
		if tenant != "big" {
			small++
		}
	}
	require.Equal(t, 50, small, "each small key's job is in the first round")
	require.Equal(t, 10000-bigTaken-10, pgqtest.Scalar[int](t, db, `SELECT ready::int FROM pgq.fair_keys WHERE key = 'big'`))
}

// S116: FIFO within a key: whatever the interleaving of dispatches and the size of reserves,
// each key's jobs are taken in dispatch order, round-robin across the keys.
func TestS116FIFOWithinAKey(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	next := map[string]int{}
	keys := []string{"a", "b", "c"}
	rng := rand.New(rand.NewSource(1))
	for range 90 {
		k := keys[rng.Intn(3)]
		next[k]++
		db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', $1::text, 'n', $2::int), queue => 'exports')`, k, next[k])
	}
	first := reserveTenants(t, db, 3)
	require.ElementsMatch(t, keys, tenants(first), "one job of each key in the first round")
	seen := map[string]int{}
	for _, j := range first {
		seen[j.Tenant] = j.N
	}
	for {
		got := reserveTenants(t, db, 1+rng.Intn(7))
		if len(got) == 0 {
			break
		}
		for _, j := range got {
			require.Equal(t, seen[j.Tenant]+1, j.N, "key %s in dispatch order", j.Tenant)
			seen[j.Tenant] = j.N
		}
	}
	for _, k := range keys {
		require.Equal(t, next[k], seen[k], "every job of key %s was taken", k)
	}
}

// S117: a key of weight 3 gets three jobs a round where a key of weight 1 gets one,
// in one big reserve and in reserves of one job.
func TestS117Weights(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	require.Equal(t, "queue exports: key 'a' weighs 3",
		pgqtest.Scalar[string](t, db, `SELECT pgq.set_fair_weight('exports', 'a', 3)`))
	dispatchTenant(t, db, "a", 200, 0)
	dispatchTenant(t, db, "b", 200, 0)
	count := func(jobs []taken) map[string]int {
		m := map[string]int{}
		for _, j := range jobs {
			m[j.Tenant]++
		}
		return m
	}
	require.Equal(t, map[string]int{"a": 30, "b": 10}, count(reserveTenants(t, db, 40)))
	var one []taken
	for range 40 {
		one = append(one, reserveTenants(t, db, 1)...)
	}
	require.Equal(t, map[string]int{"a": 30, "b": 10}, count(one))
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT weight FROM pgq.fair_keys WHERE key = 'a'`))

	_, err := db.Pool.Exec(ctx, `SELECT pgq.set_fair_weight('exports', 'a', 0)`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22023", pgErr.Code)
}

// S118: priority orders before fairness: a key's higher-priority jobs go before every key's
// lower ones, whatever the turns; within a priority, keys take turns.
func TestS118PriorityBeforeFairness(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 100, 0)
	dispatchTenant(t, db, "small", 3, 5)
	dispatchTenant(t, db, "other", 2, 5)
	got := reserveTenants(t, db, 5)
	require.ElementsMatch(t, []string{"small", "small", "small", "other", "other"}, tenants(got))
	require.Equal(t, []string{"other", "small"}, tenants(got[:2]), "within the priority, one turn each (by key on a tie)")
	require.Equal(t, []string{"big", "big"}, tenants(reserveTenants(t, db, 2)))
	// A lower-priority job of a key that just had its turn waits behind higher ones.
	dispatchTenant(t, db, "small", 1, -1)
	dispatchTenant(t, db, "small", 1, 9)
	require.Equal(t, []taken{{"small", 1}}, reserveTenants(t, db, 1))
	all := tenants(reserveTenants(t, db, 200))
	require.Len(t, all, 99)
	require.Equal(t, "small", all[len(all)-1], "the priority -1 job is last")
}

// S120: concurrent reserves on several connections take each job of a fair queue once, while
// producers dispatch to the same keys; and no key is ever left with live jobs and no
// turn: a reserve that ends a key's turn as a producer stores a job of that key.
func TestS120ConcurrentReservesTakeEachJobOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	const producers, consumers, keys = 3, 4, 12
	perProducer := 400
	if testing.Short() {
		perProducer = 150
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var dispatched atomic.Int64
	var producing, consuming sync.WaitGroup
	stop := make(chan struct{})
	for p := range producers {
		producing.Add(1)
		go func() {
			defer producing.Done()
			rng := rand.New(rand.NewSource(int64(p)))
			conn, err := pgx.Connect(ctx, db.URL)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			for i := 0; i < perProducer; {
				// One to three jobs of random keys in one transaction, in any order
				// (S121: transactions that give keys turns in opposite orders do not deadlock).
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				n := 1 + rng.Intn(3)
				picked := make([]string, n)
				for j := range picked {
					picked[j] = fmt.Sprintf("k%02d", rng.Intn(keys))
				}
				for _, key := range picked {
					if _, err := tx.Exec(ctx, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', $1::text), queue => 'exports')`,
						key); err != nil {
						t.Error(err)
						return
					}
				}
				if err := tx.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
				dispatched.Add(int64(n))
				i += n
			}
		}()
	}
	// Two minutes on, so that every kept turn (S126) is due: the reserves end the turns of
	// keys they find with no live job while the producers store jobs of them.
	reserveAndComplete := func(conn *pgx.Conn, worker string, max int) (int, error) {
		var ids, tokens []uuid.UUID
		rows, err := conn.Query(ctx, `SELECT uuid, lease_token FROM pgq.reserve($1, '{exports}', $2, 1, now() + interval '2 minutes')
		                              WHERE pickup IS NULL`, worker, max)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var id, token uuid.UUID
			if err := rows.Scan(&id, &token); err != nil {
				return 0, err
			}
			ids, tokens = append(ids, id), append(tokens, token)
		}
		if err := rows.Err(); err != nil {
			return 0, err
		}
		mu.Lock()
		for _, id := range ids {
			seen[id]++
		}
		mu.Unlock()
		if len(ids) > 0 {
			if _, err := conn.Exec(ctx, `SELECT count(*) FROM pgq.complete($1::uuid[], $2::uuid[])`, ids, tokens); err != nil {
				return 0, err
			}
		}
		return len(ids), nil
	}
	for c := range consumers {
		consuming.Add(1)
		go func() {
			defer consuming.Done()
			rng := rand.New(rand.NewSource(int64(100 + c)))
			conn, err := pgx.Connect(ctx, db.WorkerURL)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := reserveAndComplete(conn, fmt.Sprint("w", c), 1+rng.Intn(8)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// The consumers stop while the producers still dispatch: the keys whose turns they
	// ended meanwhile must have turns again for the jobs stored since.
	for dispatched.Load() < int64(producers*perProducer/2) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	consuming.Wait()
	producing.Wait()
	require.False(t, t.Failed())
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs j WHERE j.fair_key IS NOT NULL
	    AND NOT EXISTS (SELECT FROM pgq.fair_turns f WHERE f.queue = j.queue AND f.key = j.fair_key)`),
		"every key with live jobs has a turn")
	conn, err := pgx.Connect(ctx, db.WorkerURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for {
		n, err := reserveAndComplete(conn, "drain", 50)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Equal(t, int(dispatched.Load()), len(seen), "every job dispatched was taken")
	for id, n := range seen {
		require.Equal(t, 1, n, "job %s", id)
	}
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_keys`))
	// A key found with no live job keeps its turn, parked, for a minute at most (S126):
	// the reserve that serves a key dispatched again walks every turn in play, and
	// leaves none in play but that key's; the turns parked while their jobs ran are
	// parked for a minute by the worker's next rotate (S125).
	dispatchTenant(t, db, "last", 1, 0)
	n, err := reserveAndComplete(conn, "drain", 50)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	db.Exec(t, `SELECT pgq.rotate()`)
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns
	    WHERE key <> 'last' AND (parked_until IS NULL OR parked_until > now() + interval '1 minute')`))
}

// S119: pgq.fair_keys shows each key of a fair queue with live jobs: its weight, its ready
// jobs and the oldest one's wait, its jobs waiting later and running.
func TestS119FairKeysView(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.set_fair_weight('exports', 'acme', 2)`)
	dispatchTenant(t, db, "acme", 5, 0)
	dispatchTenant(t, db, "zeta", 1, 0)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "zeta"}', queue => 'exports', delay => '1 hour')`)
	require.Len(t, reserveTenants(t, db, 3), 3) // acme twice (weight 2), zeta once
	type row struct {
		Key                           string
		Weight, Ready, Later, Running int
		Waited                        bool
	}
	rows, err := db.Pool.Query(ctx, `SELECT key, weight, ready::int, later::int, running::int, oldest_wait > '0'
	                                 FROM pgq.fair_keys WHERE queue = 'exports' ORDER BY key`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.Key, &x.Weight, &x.Ready, &x.Later, &x.Running, &x.Waited)
	})
	require.NoError(t, err)
	require.Equal(t, []row{{"acme", 2, 3, 0, 2, true}, {"zeta", 1, 0, 1, 1, false}}, got)
}

// S123: a key's turn reads that key's jobs only, whatever the statistics say. One key's
// 20,000 jobs fill a slot of pgq.jobs of their own, so that ANALYZE sees that partition hold a
// single key; fifty keys get a job each in the next slot, and ten keys a job that waits
// an hour (their turns give nothing). After a first reserve on the connection
// (which sets the session's marks), a reserve of the fifty and one of the big key
// fetches a few rows per key from pgq.jobs by index: not the big key's backlog once per
// small key, as a plan that walks jobs_reserve_idx and filters by key would, nor once
// per reserve to find which keys have no job left.
func TestS123FairTurnReadsItsKeyOnly(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 20000, 0)
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536)`) // the next jobs go to a slot of their own
	for k := range 50 {
		dispatchTenant(t, db, fmt.Sprint("k", k), 1, 0)
	}
	// Ten keys whose one job waits an hour: their turns come first and give nothing.
	db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'a' || k), queue => 'exports', delay => '1 hour')
	            FROM generate_series(0, 9) k`)
	db.Exec(t, `ANALYZE pgq.jobs`)
	c, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	got, err := reserveFairOn(t, c.Conn(), "w1", 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	before := indexFetches(t, c)
	got, err = reserveFairOn(t, c.Conn(), "w1", 51)
	require.NoError(t, err)
	require.Len(t, got, 51, "fifty keys and the big one")
	n := indexFetches(t, c) - before
	require.Less(t, n, 2000, "the turns fetched %d rows by index: a key's turn read other keys' jobs", n)
}

// S123: a dispatch into a fair queue of 1,000 keys with turns reads its own key's turn,
// whether the key has one or not, and no other: the index entries and rows of
// pgq.fair_turns it reads, counted by the statistics, are a few, not a thousand.
func TestS123FairDispatchReadsItsKeysTurnsOnly(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', 'k' || k)
	            FROM generate_series(1, 1000) k), queue => 'exports')`)
	c, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	var turns int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM pgq.fair_turns WHERE queue = 'exports'`).Scan(&turns))
	require.Equal(t, 1000, turns)
	for _, tenant := range []string{"k500", "new"} {
		before := turnReads(t, c)
		_, err = c.Exec(ctx, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', $1::text), queue => 'exports')`, tenant)
		require.NoError(t, err)
		n := turnReads(t, c) - before
		require.Less(t, n, 10, "a dispatch of tenant %s read %d turns of pgq.fair_turns", tenant, n)
	}
}

// S114, S115: a change of fair_by waits for the transactions storing jobs in the queue
// under the old one, so that their jobs are keyed anew with the others and each key
// has a turn: a plain queue made fair, and a fair queue keyed by another field, while a
// dispatch is open.
func TestS114S115FairByChangeWaitsForOpenDispatches(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
	dispatchTenant(t, db, "t1", 1, 0)
	db.Exec(t, `SELECT pgq.define_queue('plain')`)
	for _, tc := range []struct{ queue, by string }{{"exports", "org"}, {"plain", "tenant"}} {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(ctx) }) // before the database goes, when the test fails
		var open string
		require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch('export', '{"tenant": "t1", "org": "o1"}', queue => $1)::text`,
			tc.queue).Scan(&open))
		redefined := make(chan error, 1)
		go func() {
			_, err := db.Pool.Exec(ctx, `SELECT pgq.define_queue($1, fair_by => $2)`, tc.queue, tc.by)
			redefined <- err
		}()
		select {
		case err := <-redefined:
			t.Fatalf("define_queue(%s) did not wait for the open dispatch: %v", tc.queue, err)
		case <-time.After(300 * time.Millisecond):
		}
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, <-redefined)
		want := map[string]string{"org": "o1", "tenant": "t1"}[tc.by]
		require.Equal(t, want, pgqtest.Scalar[string](t, db, `SELECT fair_key FROM pgq.jobs WHERE uuid = $1::uuid`, open),
			"the open dispatch's job is keyed by %s", tc.by)
		require.Zero(t, count(t, db, `pgq.jobs j WHERE j.queue = $1 AND NOT EXISTS
			(SELECT FROM pgq.fair_turns f WHERE f.queue = j.queue AND f.key = j.fair_key)`, tc.queue),
			"every key of %s has a turn", tc.queue)
	}
}

// reserveOneBeside reserves one job of 'exports' on another connection while tx, which
// has reserved, still holds its rows, then commits tx (the other reserve's end waits
// for it) and returns what the other reserve took.
func reserveOneBeside(t *testing.T, db *pgqtest.DB, tx pgx.Tx) []taken {
	t.Helper()
	second := make(chan []taken, 1)
	go func() {
		c, err := db.Pool.Acquire(ctx)
		if err != nil {
			second <- nil
			return
		}
		defer c.Release()
		got, _ := reserveFairOn(t, c.Conn(), "w2", 1)
		second <- got
	}()
	time.Sleep(200 * time.Millisecond) // the second reserve picks while the first holds its rows
	require.NoError(t, tx.Commit(ctx))
	return <-second
}

// S116, S117: a key's weight lets a reserve take up to that many of its jobs a round,
// but one that takes fewer locks no more than it takes: a reserve of one job in an open
// transaction leaves the key's next job to a concurrent reserve, which takes them in
// order.
func TestS116S117WeightedKeyLocksOnlyWhatItTakes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.set_fair_weight('exports', 'a', 5)`)
	dispatchTenant(t, db, "a", 6, 0)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	first, err := reserveFairOn(t, tx.Conn(), "w1", 1)
	require.NoError(t, err)
	require.Equal(t, []taken{{"a", 1}}, first)
	require.Equal(t, []taken{{"a", 2}}, reserveOneBeside(t, db, tx), "the key's next job, in order")
}

// S116, S117: a reserve whose size cuts a round short, its opening round or a later
// one, locks no more of the key it stops in than it takes: a concurrent reserve, which
// picks while the first holds its rows, takes that key's next job.
func TestS116S117RoundCutShortLocksOnlyWhatItTakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		weight int // of both keys
		jobsA  int
		next   int // the job of b the second reserve takes
	}{
		{"later round", 2, 4, 4},   // 7: a1 a2 b1 b2, then a3 a4 b3 of b's quota of 2
		{"opening round", 5, 5, 3}, // 7: a1-a5 b1 b2 of b's quota of 5
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			fairQueue(t, db)
			for _, key := range []string{"a", "b"} {
				db.Exec(t, `SELECT pgq.set_fair_weight('exports', $1, $2)`, key, tc.weight)
			}
			dispatchTenant(t, db, "a", tc.jobsA, 0)
			dispatchTenant(t, db, "b", 10, 0)
			tx, err := db.Pool.Begin(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = tx.Rollback(ctx) })
			first, err := reserveFairOn(t, tx.Conn(), "w1", 7)
			require.NoError(t, err)
			require.Len(t, first, 7)
			require.Equal(t, []taken{{"b", tc.next}}, reserveOneBeside(t, db, tx), "b's first job the first reserve did not take")
		})
	}
}

// fairTurn is where the turn of key stands: "in play", or parked until when.
func fairTurn(t *testing.T, db *pgqtest.DB, key string) string {
	t.Helper()
	return pgqtest.Scalar[string](t, db, `SELECT coalesce(parked_until::text, 'in play') FROM pgq.fair_turns
	    WHERE queue = 'exports' AND key = $1`, key)
}

// S125: the reserve that takes a key's last ready job parks the key at its end, as the
// next walk would find it idle: reserves pass it over while its job runs. A key cut
// short by the reserve's max stays in play, and a job of the key written waiting brings
// the turn back.
func TestS125KeyWhoseLastReadyJobIsTakenIsParkedAtOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "a", 1, 0)
	dispatchTenant(t, db, "big", 20, 0)
	require.Equal(t, []string{"a", "big", "big", "big", "big"}, tenants(reserveTenants(t, db, 5)))
	require.Equal(t, "infinity", fairTurn(t, db, "a"), "a's only job runs")
	require.Equal(t, "in play", fairTurn(t, db, "big"), "big, cut short by the reserve's max, has more")
	dispatchTenant(t, db, "a", 1, 0)
	require.Equal(t, []string{"a", "big"}, tenants(reserveTenants(t, db, 2)), "a back, ahead of big")
}

// S125: a key whose next ready job another transaction holds (as a reserve under way
// does, SKIP LOCKED passing it over) is not parked by a reserve that took its other
// jobs: it stays in play, and the held job is taken by the next reserve.
func TestS125KeyWhoseNextJobAnotherTransactionHoldsStaysInPlay(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "k", 2, 0)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM pgq.jobs WHERE fair_key = 'k' AND payload->>'n' = '1' FOR UPDATE`)
	require.NoError(t, err)
	require.Equal(t, []taken{{"k", 2}}, reserveTenants(t, db, 10), "k's first job held")
	require.Equal(t, "in play", fairTurn(t, db, "k"))
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, []taken{{"k", 1}}, reserveTenants(t, db, 10))
}

// S126: a key found with no live job keeps its turn, parked, for a minute: a dispatch
// of it within the minute makes no new turn (no row written to pgq.fair_turns by its
// transaction, commit trigger included), and its job is served in the next reserve.
func TestS126KeyDispatchingAgainWithinAMinuteMakesNoTurn(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	// a's second job keeps its turn in play when the first is taken; cancelled, it leaves
	// the key with no live job once the first is done.
	dispatchTenant(t, db, "a", 2, 0)
	require.Equal(t, []string{"a"}, tenants(reserveTenants(t, db, 1)))
	db.Exec(t, `SELECT pgq.cancel(uuid) FROM pgq.jobs WHERE fair_key = 'a' AND reserved_at IS NULL`)
	db.Exec(t, `SELECT pgq.complete(ARRAY[uuid], ARRAY[lease_token]) FROM pgq.jobs WHERE fair_key = 'a'`)
	dispatchTenant(t, db, "b", 1, 0)
	require.Equal(t, []string{"b"}, tenants(reserveTenants(t, db, 10)), "a walked, with no live job")
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns
	    WHERE key = 'a' AND parked_until BETWEEN now() AND now() + interval '1 minute'`), "a's turn kept, parked")

	// Rows written to pgq.fair_turns by this session so far: a backend keeps them
	// pending across transactions until it reports them, so a dispatch's are the
	// difference of two reads in its transaction.
	writes := `SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables WHERE relid = 'pgq.fair_turns'::regclass`
	var before, after int64
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, writes).Scan(&before); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pgq.dispatch('export', '{"tenant": "a", "n": 2}', queue => 'exports')`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET CONSTRAINTS ALL IMMEDIATE`); err != nil { // the turns made at commit
			return err
		}
		return tx.QueryRow(ctx, writes).Scan(&after)
	}))
	require.Equal(t, before, after, "the dispatch wrote no turn")
	require.Equal(t, []taken{{"a", 2}}, reserveTenants(t, db, 10))
}

// S114: a fair key is at most 1000 bytes; a dispatch whose fair_by field is longer is
// refused with 22023 and stores nothing.
func TestS114FairKeyLengthIsBounded(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', repeat('x', 1001)), queue => 'exports')`)
	require.Equal(t, "22023", pgCode(err))
	require.ErrorContains(t, err, "at most 1000 bytes")
	require.Zero(t, count(t, db, `pgq.jobs`))
	db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', repeat('x', 1000)), queue => 'exports')`)
	require.Equal(t, 1, count(t, db, `pgq.jobs`))
}

// S115: a key's one job waits at most one turn when the backlog spans two slots: a
// reserve whose picks a slot boundary cuts short goes on with its round where it left
// it, rather than start the round again with the keys it has served. (The small key's
// name has the characters an array literal quotes: the rest of the round is kept as
// text between picks.)
func TestS115RoundGoesOnAcrossSlots(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 3000, 0)
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536)`) // the next job goes to a slot of its own
	const small = `s,"m" {a} \ NULL`
	dispatchTenant(t, db, small, 1, 0)
	got := reserveTenants(t, db, 10)
	require.Len(t, got, 10)
	require.Contains(t, got[:2], taken{small, 1}, "the small key's job in the round's first turns: %v", got)
	require.Equal(t, []taken{{"big", 1}, {"big", 2}, {"big", 3}, {"big", 4}, {"big", 5}, {"big", 6}, {"big", 7}, {"big", 8}, {"big", 9}},
		slices.DeleteFunc(slices.Clone(got), func(j taken) bool { return j.Tenant == small }), "the big key's jobs in order")
}

// S115, S74: the rows of a walk that a reserve keeps for its next pick (past a slot
// boundary) and that an earlier pick's job ends meanwhile (x, failed for good at
// pickup, cancels its batch's waiting member y) are not charged to their key: key c
// keeps its turn, and its next job goes in the same round as the other keys'.
func TestS115S74RestEndedByAnEarlierPickIsNotCharged(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.dispatch_batch('[{"job": "export", "payload": {"tenant": "a", "n": 1}},
	                                        {"job": "export", "payload": {"tenant": "c", "n": 1}}]', queue => 'exports')`)
	db.Exec(t, `SELECT pgq.dispatch_many('filler', array_fill('{}'::jsonb, ARRAY[1000]), queue => 'other')`)
	db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536)`) // the next jobs go to a slot of their own
	dispatchTenant(t, db, "b", 1, 0)
	dispatchTenant(t, db, "c", 1, 0)
	db.Exec(t, `UPDATE pgq.jobs SET payload = payload || '{"n": 2}' WHERE fair_key = 'c' AND batch_id IS NULL`)
	dispatchTenant(t, db, "d", 1, 0)
	db.Exec(t, `UPDATE pgq.jobs SET retry_until = now() - interval '1 hour' WHERE fair_key = 'a'`)
	got := reserveTenants(t, db, 3)
	require.ElementsMatch(t, []taken{{"b", 1}, {"c", 2}, {"d", 1}}, got, "a failed for good, c's batch job cancelled with it")
	require.Equal(t, []float64{1, 1, 1}, pgqtest.Scalar[[]float64](t, db,
		`SELECT array_agg(pass ORDER BY key) FROM pgq.fair_turns WHERE queue = 'exports' AND key IN ('b', 'c', 'd')`),
		"one job taken of each: none charged for the cancelled one")
}

// S115, S116, S117: where a slot boundary falls changes nothing in a fair queue's order:
// the same dispatches (weighted keys, jobs with middleware, which go through admission)
// reserved in the same calls give the same jobs in the same order whether the backlog
// fills one slot or two.
func TestS115S116S117SlotBoundaryChangesNoOrder(t *testing.T) {
	t.Parallel()
	order := func(rotate bool) [][]taken {
		db := pgqtest.New(t)
		fairQueue(t, db)
		db.Exec(t, `SELECT pgq.set_fair_weight('exports', 'a', 2)`)
		db.Exec(t, `SELECT pgq.dispatch_many('filler', array_fill('{}'::jsonb, ARRAY[1000]), queue => 'other')`)
		dispatchTenant(t, db, "a", 4, 0)
		dispatchTenant(t, db, "b", 3, 0)
		db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'd', 'n', i), queue => 'exports',
		            middleware => '[{"without_overlapping": {"by": ["n"]}}]') FROM generate_series(1, 2) i`)
		if rotate {
			db.Exec(t, `SELECT pgq.rotate(slot_bytes => 65536)`) // the jobs below go to a slot of their own
		}
		dispatchTenant(t, db, "c", 2, 0)
		db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', t, 'n', 10 + i), queue => 'exports',
		            middleware => CASE WHEN t = 'd' THEN '[{"without_overlapping": {"by": ["n"]}}]'::jsonb END)
		            FROM unnest(ARRAY['a', 'a', 'b', 'd', 'd']) WITH ORDINALITY u(t, i)`)
		slots := map[bool]int{false: 1, true: 2}[rotate]
		require.Equal(t, slots, count(t, db, `(SELECT DISTINCT slot FROM pgq.jobs WHERE queue = 'exports') s`))
		var got [][]taken
		for range 4 {
			got = append(got, reserveTenants(t, db, 4))
		}
		require.Zero(t, count(t, db, `pgq.jobs WHERE queue = 'exports' AND reserved_at IS NULL`), "every job reserved")
		return got
	}
	one, two := order(false), order(true)
	require.Equal(t, one, two, "one slot: %v; two: %v", one, two)
}

// S115, S28: the settings a reserve's stages hand each other cannot be given values by
// its caller: a transaction that sets pgq.fair_pending (to push key a back a thousand
// turns) and pgq.fair_rest (to have a job with a spent rate limit taken as plain) before
// it reserves changes neither the turns nor the admission.
func TestS115S28ReserveIgnoresItsCallersStageSettings(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.define_limit('api', 1, '1 hour')`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "a"}', queue => 'exports', middleware => '[{"rate_limited": {"limit": "api"}}]')`)
	require.Len(t, reserveTenants(t, db, 1), 1, "the hour's one call")
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "a", "n": 2}', queue => 'exports', middleware => '[{"rate_limited": {"limit": "api"}}]')`)
	dispatchTenant(t, db, "b", 1, 0)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `
		SELECT set_config('pgq.fair_pending', '[["exports", "a", 1000]]', true),
		       set_config('pgq.fair_rest', ARRAY['exports', ARRAY[j.ctid]::text, ARRAY[j.slot]::text, ARRAY[j.id]::text,
		                                         '{t}', '{a}']::text, true)
		FROM pgq.jobs j WHERE j.payload ->> 'n' = '2'`)
	require.NoError(t, err)
	got, err := reserveFairOn(t, tx.Conn(), "w", 10)
	require.NoError(t, err)
	require.Equal(t, []taken{{"b", 1}}, got, "a's job turned away by its spent limit, not taken as plain")
	require.NoError(t, tx.Commit(ctx))
	require.Less(t, pgqtest.Scalar[float64](t, db, `SELECT pass FROM pgq.fair_turns WHERE queue = 'exports' AND key = 'a'`), 10.0)
}

// S120: a reserve that finds a key with nothing ready but a live job (one that waits an
// hour) keeps the key's turn without taking the key's lock, so a dispatch of that key
// goes on while the reserve's transaction is open; it takes the lock only to end the
// turn of a key with no live job left, and a dispatch of that key waits for it.
func TestS120IdleKeyWithLiveJobKeepsItsTurnWithoutItsLock(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	require.NotEqual(t, pgqtest.Scalar[int](t, db, `SELECT pgq._fair_lock('exports', 'late')`),
		pgqtest.Scalar[int](t, db, `SELECT pgq._fair_lock('exports', 'gone')`), "keys of one lock")
	dispatchTenant(t, db, "gone", 1, 0)
	require.Len(t, reserveTenants(t, db, 1), 1)
	db.Exec(t, `SELECT pgq.complete(ARRAY[uuid], ARRAY[lease_token]) FROM pgq.jobs WHERE fair_key = 'gone'`)
	dispatchTenant(t, db, "first", 1, 0)
	require.Equal(t, []string{"first"}, tenants(reserveTenants(t, db, 10)), "'gone' walked with no live job: kept, parked (S126)")
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "late"}', queue => 'exports', delay => '1 hour')`)
	dispatchTenant(t, db, "now", 1, 0)

	// 'late' (a job an hour away) and 'gone' (none left, its keep over two minutes on)
	// are walked and give nothing.
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM pgq.reserve('w1', '{exports}', 10, 1, now() + interval '2 minutes')
	                                     WHERE pickup IS NULL`).Scan(&n))
	require.Equal(t, 1, n, "the job of 'now'")

	dispatch := func(key string) error {
		return pgx.BeginFunc(ctx, db.Pool, func(c pgx.Tx) error {
			if _, err := c.Exec(ctx, `SET LOCAL lock_timeout = '300ms'`); err != nil {
				return err
			}
			_, err := c.Exec(ctx, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', $1::text), queue => 'exports')`, key)
			return err
		})
	}
	require.NoError(t, dispatch("late"), "a key with a live job: its store waits for no reserve")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, dispatch("gone"), &pgErr, "a key whose turn the open reserve ends")
	require.Equal(t, "55P03", pgErr.Code)
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, dispatch("gone"))
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE key IN ('late', 'now', 'gone')`),
		"late, now and gone have turns")
}

// parkedKeys makes a fair queue of a key with 1,000 ready jobs and 500 keys with a job
// an hour away each, and returns a session whose first reserve (ten of the big key's
// jobs) has parked the 500 (S125; pgq.fair_keys shows until when, S119).
func parkedKeys(t *testing.T, db *pgqtest.DB) *pgx.Conn {
	t.Helper()
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 1000, 0)
	db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'a' || k), queue => 'exports', delay => '1 hour')
	            FROM generate_series(1, 500) k`)
	c := session(t, db)
	got, err := reserveFairOn(t, c, "w1", 10)
	require.NoError(t, err)
	require.Len(t, got, 10)
	require.Equal(t, 500, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_keys WHERE parked_until > now() + '59 minutes'`))
	return c
}

// S125, S119: keys whose jobs all wait for later are parked by the first reserve that
// finds them so (pgq.fair_keys shows until when), and the reserves after it read none
// of their jobs: a reserve of ten jobs
// of a big key, beside 500 keys with a job an hour away, fetches a few rows by index,
// not one for each of the 500.
func TestS125S119ParkedKeysCostReservesNothing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	c := parkedKeys(t, db)
	before := indexFetches(t, c)
	got, err := reserveFairOn(t, c, "w1", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"big", "big", "big", "big", "big", "big", "big", "big", "big", "big"}, tenants(got))
	n := indexFetches(t, c) - before
	require.Less(t, n, 100, "the reserve fetched %d rows by index: it walked the parked keys", n)
}

// S125: the keys that come back cost a reserve their own turns only: with 500 keys
// parked, a reserve that 20 of them come back to reads a few entries of
// pgq.fair_turns for each, not every parked turn for each.
func TestS125KeysComingBackCostTheirOwnTurnsOnly(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	c := parkedKeys(t, db)
	db.Exec(t, `VACUUM pgq.fair_turns`) // as workers do (S47): the versions the parking left go
	db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'a' || k), queue => 'exports')
	            FROM generate_series(1, 20) k`)
	before := turnReads(t, c)
	got, err := reserveFairOn(t, c, "w1", 50)
	require.NoError(t, err)
	require.Len(t, slices.DeleteFunc(tenants(got), func(k string) bool { return k == "big" }), 20)
	n := turnReads(t, c) - before
	require.Less(t, n, 300, "a reserve that 20 keys came back to read %d turns of pgq.fair_turns", n)
}

// firstTurnOf reserves one job at a time on c until one of tenant comes, and returns
// how many of other keys came before it (at most limit).
func firstTurnOf(t *testing.T, c *pgx.Conn, tenant string, as time.Time, limit int) int {
	t.Helper()
	for before := 0; before < limit; before++ {
		var got string
		require.NoError(t, c.QueryRow(ctx, `SELECT coalesce(string_agg(payload->>'tenant', ','), '')
		    FROM pgq.reserve('w1', '{exports}', 1, 0, $1) WHERE pickup IS NULL`, as).Scan(&got))
		if got == tenant {
			return before
		}
	}
	return limit
}

// S125, S115: a parked key comes back, and waits at most one turn, when a job of it is
// written waiting: run now, dispatched, or backed off after its last running job
// failed; and when its delayed job's time comes. A session's first reserve on the
// queue brings back, at its end, a key whose job another session ran now.
func TestS125S115ParkedKeyComesBack(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 2000, 0)
	late := dispatch(t, db, `'export', '{"tenant": "late"}', queue => 'exports', delay => '1 hour'`)
	dispatch(t, db, `'export', '{"tenant": "later"}', queue => 'exports', delay => '1 hour'`)
	dispatchTenant(t, db, "busy", 1, 0)
	c := session(t, db)
	require.LessOrEqual(t, firstTurnOf(t, c, "busy", time.Now(), 5), 2)
	// late, later and busy (its one job runs) are parked now.
	for range 3 {
		require.Equal(t, 1, firstTurnOf(t, c, "none", time.Now(), 1))
	}
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE parked_until > now()`))

	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now($1)`, late))
	require.LessOrEqual(t, firstTurnOf(t, c, "late", time.Now(), 50), 1, "run now")
	dispatchTenant(t, db, "late", 1, 0)
	require.LessOrEqual(t, firstTurnOf(t, c, "late", time.Now(), 50), 1, "dispatched")
	db.Exec(t, `SELECT pgq.fail(uuid, lease_token, 'boom', false, 0, '{0}') FROM pgq.jobs WHERE fair_key = 'busy'`)
	require.LessOrEqual(t, firstTurnOf(t, c, "busy", time.Now(), 50), 1, "backed off")
	require.LessOrEqual(t, firstTurnOf(t, c, "later", time.Now().Add(2*time.Hour), 50), 1, "its time came")

	// A key parked by one session, whose job is run now; another session's first reserve.
	dispatch(t, db, `'export', '{"tenant": "last"}', queue => 'exports', delay => '1 hour'`)
	for range 3 {
		require.Equal(t, 1, firstTurnOf(t, c, "none", time.Now(), 1))
	}
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now(uuid) FROM pgq.jobs WHERE fair_key = 'last'`))
	other := session(t, db)
	require.Equal(t, 1, firstTurnOf(t, other, "none", time.Now(), 1), "a first reserve looks from no snapshot")
	require.LessOrEqual(t, firstTurnOf(t, other, "last", time.Now(), 50), 1, "brought back by the first reserve's end")
}

// S125, S126: a key parked while its one job ran keeps its turn once the job has ended
// for a minute only: the worker's rotation parks it until then, and the first reserve
// after it, finding the key still with no live job, ends the turn as an idle key's; a
// key whose store is under way meanwhile comes back with its job.
func TestS125S126ParkedTurnOfAnEndedKeyGoes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 100, 0)
	dispatchTenant(t, db, "done", 1, 0)
	dispatchTenant(t, db, "storing", 1, 0)
	c := session(t, db)
	got, err := reserveFairOn(t, c, "w1", 3)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"big", "done", "storing"}, tenants(got))
	for range 3 {
		_, err := reserveFairOn(t, c, "w1", 1)
		require.NoError(t, err)
	}
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE parked_until = 'infinity'`))
	db.Exec(t, `SELECT pgq.complete(array_agg(uuid), array_agg(lease_token)) FROM pgq.jobs WHERE fair_key IN ('done', 'storing')`)

	tx, err := db.Pool.Begin(ctx) // a store of 'storing' under way
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `SELECT pgq.dispatch('export', '{"tenant": "storing"}', queue => 'exports')`)
	require.NoError(t, err)
	db.Exec(t, `SELECT pgq.rotate()`)
	require.Equal(t, []string{"done", "storing"}, pgqtest.Scalar[[]string](t, db,
		`SELECT array_agg(key ORDER BY key) FROM pgq.fair_turns WHERE parked_until BETWEEN now() AND now() + interval '1 minute'`),
		"kept for a minute")
	require.NoError(t, tx.Commit(ctx))
	require.LessOrEqual(t, firstTurnOf(t, c, "storing", time.Now(), 50), 1)
	_, err = c.Exec(ctx, `SELECT count(*) FROM pgq.reserve('w1', '{exports}', 1, 1, now() + interval '2 minutes')`)
	require.NoError(t, err)
	require.Equal(t, []string{"big", "storing"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(key ORDER BY key) FROM pgq.fair_turns`))
}

// S115, S125: a key that gets its turn while every other key is parked (their jobs all
// run) starts at the queue's floor, not below the others: when their jobs come back it
// takes its turn among them, one job a round, instead of running its backlog first.
func TestS115S125NewKeyStartsAtTheFloorWhenAllAreParked(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "a", 30, 0)
	dispatchTenant(t, db, "b", 30, 0)
	c := session(t, db)
	got, err := reserveFairOn(t, c, "w1", 60)
	require.NoError(t, err)
	require.Len(t, got, 60)
	db.Exec(t, `SELECT pgq.complete(array_agg(uuid), array_agg(lease_token)) FROM pgq.jobs WHERE reserved_at IS NOT NULL`)
	dispatchTenant(t, db, "a", 1, 0)
	dispatchTenant(t, db, "b", 1, 0)
	got, err = reserveFairOn(t, c, "w1", 2)
	require.NoError(t, err)
	require.Len(t, got, 2)
	dispatchTenant(t, db, "c", 1, 0)
	// Another transaction holds c's job while this reserve walks: a and b (running) and
	// c are all parked.
	other := session(t, db)
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `SELECT FROM pgq.jobs WHERE fair_key = 'c' FOR UPDATE`)
	require.NoError(t, err)
	got, err = reserveFairOn(t, c, "w1", 10)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE parked_until IS NULL`), "all parked")

	dispatchTenant(t, db, "n", 50, 0)
	dispatchTenant(t, db, "a", 20, 0)
	dispatchTenant(t, db, "b", 20, 0)
	seen := map[string]int{}
	for range 7 {
		got, err := reserveFairOn(t, c, "w1", 1)
		require.NoError(t, err)
		require.Len(t, got, 1)
		seen[got[0].Tenant]++
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2, "c": 1, "n": 2}, seen, "round-robin from the floor")
}

// S115: after a reserve of a batch across keys, a new key starts at the lowest pass in
// play: it waits for at most one job of each, not for as many as the batch took.
func TestS115NewKeyAfterABatchWaitsOneRound(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "a", 60, 0)
	dispatchTenant(t, db, "b", 60, 0)
	require.Len(t, reserveTenants(t, db, 100), 100)
	dispatchTenant(t, db, "n", 60, 0)
	var got []string
	for range 6 {
		got = append(got, tenants(reserveTenants(t, db, 1))...)
	}
	require.ElementsMatch(t, []string{"a", "a", "b", "b", "n", "n"}, got, "one job of each a round: %v", got)
}

// S125, S115: a key back from parking rejoins just ahead of the lowest pass in play: a
// key parked at pass 0 while another ran 50 jobs takes one job a round when its
// backlog comes, not 50 in a row.
func TestS125S115ParkedKeyRejoinsAtTheFloor(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "late"}', queue => 'exports', delay => '1 hour')`)
	dispatchTenant(t, db, "big", 100, 0)
	c := session(t, db)
	for range 50 {
		got, err := reserveFairOn(t, c, "w1", 1)
		require.NoError(t, err)
		require.Equal(t, []string{"big"}, tenants(got))
	}
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE key = 'late' AND pass < 1 AND parked_until > now()`))
	dispatchTenant(t, db, "late", 20, 0)
	var got []string
	for range 6 {
		g, err := reserveFairOn(t, c, "w1", 1)
		require.NoError(t, err)
		got = append(got, tenants(g)...)
	}
	require.Equal(t, []string{"late", "big", "late", "big", "late", "big"}, got)
}

// S125, S14: a key parked while its one job ran comes back when the job is released,
// and when its lease runs out and a reserve sweeps it back to waiting: the next reserve
// of the session takes it within a turn.
func TestS125S14ReleasedAndSweptKeysComeBack(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	dispatchTenant(t, db, "big", 100, 0)
	dispatchTenant(t, db, "rel", 1, 0)
	dispatchTenant(t, db, "exp", 1, 0)
	c := session(t, db)
	got, err := reserveFairOn(t, c, "w1", 3)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"big", "rel", "exp"}, tenants(got))
	for range 3 {
		require.Equal(t, 1, firstTurnOf(t, c, "none", time.Now(), 1))
	}
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE parked_until = 'infinity'`))

	db.Exec(t, `SELECT pgq.release(uuid, lease_token, 0) FROM pgq.jobs WHERE fair_key = 'rel'`)
	require.LessOrEqual(t, firstTurnOf(t, c, "rel", time.Now(), 50), 1, "released")
	later := time.Now().Add(10 * time.Minute) // past exp's lease: the first reserve sweeps it
	require.LessOrEqual(t, firstTurnOf(t, c, "exp", later, 50), 2, "swept back")
}

// S125: keys whose one job runs are parked too: beside 300 of them, a reserve of ten
// jobs of a big key fetches a few rows by index, not one for each running key.
func TestS125KeysWhoseJobsRunCostReservesNothing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	fairQueue(t, db)
	db.Exec(t, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', 'r' || k), queue => 'exports')
	            FROM generate_series(1, 300) k`)
	c := session(t, db)
	got, err := reserveFairOn(t, c, "w1", 300)
	require.NoError(t, err)
	require.Len(t, got, 300, "each key's one job runs")
	dispatchTenant(t, db, "big", 1000, 0)
	got, err = reserveFairOn(t, c, "w1", 10) // walks the 300 idle keys once, and parks them
	require.NoError(t, err)
	require.Len(t, got, 10)
	require.Equal(t, 300, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE parked_until = 'infinity'`))
	before := indexFetches(t, c)
	got, err = reserveFairOn(t, c, "w1", 10)
	require.NoError(t, err)
	require.Len(t, got, 10)
	n := indexFetches(t, c) - before
	require.Less(t, n, 100, "the reserve fetched %d rows by index: it walked the parked keys", n)
}
