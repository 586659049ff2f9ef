package sql_test

// Transactions that give the same new keys of a fair queue their turns, in opposite
// orders, concurrently (S121).

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// raceKeys runs, rounds times, two transactions at once, each on a producer's
// connection of its own: tx(conn, round, side) runs the dispatches of side 0 or 1 of a
// round, after which the transaction commits. between, when set, is where both sides
// wait for each other: each calls it once, after its first dispatch, and it returns
// when both have. It fails t on any error, naming deadlocks (40P01) and unique
// violations (23505), and then checks that every key with live jobs has a turn.
func raceKeys(t *testing.T, db *pgqtest.DB, rounds int,
	tx func(c pgx.Tx, round, side int, between func()) error) {
	t.Helper()
	conns := [2]*pgx.Conn{db.ConnAs(t, pgqtest.ProducerRole), db.ConnAs(t, pgqtest.ProducerRole)}
	var deadlocks, violations int
	for round := range rounds {
		var both sync.WaitGroup
		both.Add(2)
		var done sync.WaitGroup
		errs := [2]error{}
		for side := range 2 {
			done.Go(func() {
				met := false
				between := func() {
					met = true
					both.Done()
					both.Wait()
				}
				defer func() {
					if !met {
						both.Done() // the other side must not wait for one that failed first
					}
				}()
				errs[side] = pgx.BeginFunc(ctx, conns[side], func(c pgx.Tx) error {
					return tx(c, round, side, between)
				})
			})
		}
		done.Wait()
		for _, err := range errs {
			var pgErr *pgconn.PgError
			switch {
			case err == nil:
			case errors.As(err, &pgErr) && pgErr.Code == "40P01":
				deadlocks++
			case errors.As(err, &pgErr) && pgErr.Code == "23505":
				violations++
			default:
				require.NoError(t, err, "round %d", round)
			}
		}
	}
	require.Zero(t, deadlocks, "transactions that failed with a deadlock (40P01), of %d", 2*rounds)
	require.Zero(t, violations, "transactions that failed with a unique violation (23505), of %d", 2*rounds)
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs j WHERE j.fair_key IS NOT NULL
	    AND NOT EXISTS (SELECT FROM pgq.fair_turns f WHERE f.queue = j.queue AND f.key = j.fair_key)`),
		"every key with live jobs has a turn")
}

// keysOf are n new keys of a round of test, in order for side 0 and reversed for
// side 1.
func keysOf(test string, round, side, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-r%03d-k%03d", test, round, i)
	}
	if side == 1 {
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return keys
}

// S121: transactions that store jobs of the same new keys of a fair queue, in opposite
// orders and at once, all commit: by one dispatch a key, by one dispatch_many of many
// keys, by a unique dispatch_many (a job at a time), by a batch whose jobs have options
// of their own (a dispatch each), and into two fair queues.
func TestS121NewFairKeysInOppositeOrders(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
	db.Exec(t, `SELECT pgq.define_queue('imports', fair_by => 'tenant')`)
	db.Exec(t, `SELECT pgq.define_job('unique_export', queue => 'exports', unique_for => '1 hour', unique_by => '{tenant, side}')`)
	rounds := 20
	if testing.Short() {
		rounds = 8
	}

	t.Run("OneDispatchAKey", func(t *testing.T) {
		// Side 0 gives x its turn, side 1 y; then each stores a job of the other's key
		// while that transaction is still open.
		raceKeys(t, db, rounds, func(c pgx.Tx, round, side int, between func()) error {
			keys := keysOf("OneDispatchAKey", round, side, 2)
			for i, key := range keys {
				if _, err := c.Exec(ctx, `SELECT pgq.dispatch('export', jsonb_build_object('tenant', $1::text, 'step', 'one'), queue => 'exports')`,
					key); err != nil {
					return err
				}
				if i == 0 {
					between()
				}
			}
			return nil
		})
	})
	t.Run("DispatchMany", func(t *testing.T) {
		raceKeys(t, db, rounds, func(c pgx.Tx, round, side int, between func()) error {
			between()
			_, err := c.Exec(ctx, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', k, 'step', 'many')
			                                                             FROM unnest($1::text[]) k), queue => 'exports')`,
				keysOf("DispatchMany", round, side, 300))
			return err
		})
	})
	t.Run("UniqueDispatchMany", func(t *testing.T) {
		raceKeys(t, db, rounds, func(c pgx.Tx, round, side int, between func()) error {
			between()
			_, err := c.Exec(ctx, `SELECT pgq.dispatch_many('unique_export', ARRAY(SELECT jsonb_build_object('tenant', k, 'side', $2::int, 'step', 'unique')
			                                                                    FROM unnest($1::text[]) k))`,
				keysOf("UniqueDispatchMany", round, side, 300), side)
			return err
		})
	})
	t.Run("BatchOfOptions", func(t *testing.T) {
		raceKeys(t, db, rounds, func(c pgx.Tx, round, side int, between func()) error {
			between()
			_, err := c.Exec(ctx, `SELECT pgq.dispatch_batch((SELECT jsonb_agg(jsonb_build_object('job', 'export', 'priority', n % 50,
			                                                    'payload', jsonb_build_object('tenant', k, 'step', 'batch')) ORDER BY n)
			                                                  FROM unnest($1::text[]) WITH ORDINALITY u(k, n)), queue => 'exports')`,
				keysOf("BatchOfOptions", round, side, 100))
			return err
		})
	})
	t.Run("TwoQueues", func(t *testing.T) {
		raceKeys(t, db, rounds, func(c pgx.Tx, round, side int, between func()) error {
			queues := []string{"exports", "imports"}
			if side == 1 {
				queues[0], queues[1] = queues[1], queues[0]
			}
			keys := keysOf("TwoQueues", round, 0, 50)
			for i, q := range queues {
				if _, err := c.Exec(ctx, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', k, 'step', 'queues')
				                                                             FROM unnest($1::text[]) k), queue => $2)`, keys, q); err != nil {
					return err
				}
				if i == 0 {
					between()
				}
			}
			return nil
		})
	})
}

// S120, S121: a dispatch of jobs of very many keys of a fair queue takes the keys' locks
// without filling the server's lock table (a few dozen locks a connection): keys share
// 256 locks.
func TestS120S121DispatchOfManyKeys(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
	const keys = 20000
	c := db.ConnAs(t, pgqtest.ProducerRole)
	_, err := c.Exec(ctx, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', 't' || i) FROM generate_series(1, $1::int) i),
	                                               queue => 'exports')`, keys)
	require.NoError(t, err)
	require.Equal(t, keys, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_turns WHERE queue = 'exports'`), "a turn per key")
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.fair_entries`), "no entry outlives its transaction")
}
