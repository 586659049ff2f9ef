package sql_test

// Tests of how the protocol's statements are planned: what a session runs once its plans
// are made, and at what cost they are planned.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// protocolRound is one round of the protocol in one transaction: dispatches of every
// kind (a fair queue's, a load, unique, debounced, with every middleware, SQL jobs, a
// chain and a batch), a reserve into the temporary table r, heartbeats, SQL jobs run,
// fail, release, cancels of a row and of a chunk's job, completions, a worker's read of
// its cancel requests; then reserves two and four hours on, which sweep the leases of
// the jobs left running and fail them for good at pickup.
var protocolRound = []string{
	`SELECT pgq.dispatch('f', '{"tenant": "a"}', queue => 'fq')`,
	`SELECT pgq.dispatch_many('f', ARRAY['{"tenant": "a"}', '{"tenant": "b"}']::jsonb[], queue => 'fq')`,
	`SELECT pgq.dispatch('f', '{"tenant": "c"}', queue => 'fq', delay => '1 hour')`,
	`SELECT pgq.dispatch('plain')`,
	`SELECT count(*) FROM pgq.dispatch_many('plain', array_fill('{}'::jsonb, ARRAY[1000]))`,
	`SELECT pgq.dispatch('plain', unique_key => 'u', unique_for => '1 hour')`,
	`SELECT pgq.dispatch('plain', unique_key => 'p', unique_for => '1 hour', unique_until => 'processing')`,
	`SELECT pgq.dispatch('plain', debounce_key => 'd', debounce_for => '1 second')`,
	`SELECT pgq.dispatch('mw', '{"account": 1}')`,
	`SELECT pgq.dispatch('sqlj')`,
	`SELECT pgq.dispatch('sqlo')`,
	`SELECT pgq.dispatch_chain('[{"job": "plain"}, {"job": "plain"}]', 'plain')`,
	`SELECT pgq.dispatch_batch('[{"job": "plain"}, {"job": "plain"}]', then_job => 'plain', finally_job => 'plain')`,
	`SET CONSTRAINTS ALL IMMEDIATE`, // the turns of new keys, made at commit
	`INSERT INTO r SELECT * FROM pgq.reserve('w', '{fq,default}', 2000)`,
	`SELECT count(*) FROM pgq.heartbeat(ARRAY(SELECT uuid FROM r), ARRAY(SELECT lease_token FROM r))`,
	`SELECT pgq.run_sql_job(uuid, lease_token) FROM r WHERE job IN ('sqlj', 'sqlo')`,
	`SELECT count(*) FROM r, pgq.fail(r.uuid, r.lease_token, 'boom') WHERE r.job = 'mw'`,
	`SELECT count(*) FROM r, pgq.release(r.uuid, r.lease_token, 10) WHERE r.job = 'f'`,
	`SELECT pgq.cancel(j.uuid) FROM pgq.jobs j WHERE j.queue = 'fq' AND j.reserved_at IS NULL`,
	`SELECT count(*) FROM pgq.complete(ARRAY(SELECT uuid FROM r WHERE job = 'plain' ORDER BY uuid LIMIT 500),
		ARRAY(SELECT lease_token FROM r WHERE job = 'plain' ORDER BY uuid LIMIT 500))`,
	`SELECT pgq.cancel(u) FROM pgq.dispatch_many('plain', array_fill('{}'::jsonb, ARRAY[1000])) u LIMIT 1`, // of a chunk
	`SELECT count(*) FROM pgq.cancel_requests('w')`,
	`SELECT count(*) FROM pgq.reserve('w2', '{fq,default}', 2000, as_of => now() + interval '2 hours')`,
	`SELECT count(*) FROM pgq.reserve('w3', '{fq,default}', 2000, as_of => now() + interval '4 hours')`,
}

// protocolSession is a migrated database with the classes protocolRound uses, and one
// connection to it as its admin, whose notices go to notices, with generic plans only
// (a custom plan, made again at each call, calls the constant functions it folds) and
// the table r.
func protocolSession(t *testing.T, notices func(string)) *pgx.Conn {
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('fq', fair_by => 'tenant')`)
	db.Exec(t, `SELECT pgq.define_limit('api', 1000000, '1 hour'); SELECT pgq.define_concurrency('vendor', 100)`)
	db.Exec(t, `SELECT pgq.define_job('mw', middleware => '[{"concurrency_limited": {"by": ["account"], "limit": 2}},
		{"concurrency_limited": {"limit": "vendor"}}, {"rate_limited": {"limit": "api"}},
		{"without_overlapping": {"key": "k"}}, {"throttles_exceptions": {}}]')`)
	db.Exec(t, `CREATE FUNCTION public.handle(p jsonb) RETURNS void LANGUAGE plpgsql AS 'BEGIN END'`)
	db.Exec(t, `SELECT pgq.define_job('sqlj', handler => 'public.handle')`)
	db.Exec(t, `SELECT pgq.define_job('sqlo', handler => 'public.handle', middleware => '[{"without_overlapping": {"key": "o"}}]')`)

	ctx := context.Background()
	cfg, err := pgx.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices(n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	for _, s := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`CREATE TEMP TABLE r AS SELECT * FROM pgq.reserve('w', '{none}', 1) WITH NO DATA`,
	} {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	return conn
}

// runRound runs protocolRound in a transaction that it rolls back, with begin and end
// run in it first and last; end's result is the round's.
func runRound[T any](t *testing.T, conn *pgx.Conn, begin func(pgx.Tx), end func(pgx.Tx) T) T {
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	begin(tx)
	for _, s := range protocolRound {
		_, err := tx.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	var reserved int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM r`).Scan(&reserved))
	require.Equal(t, 1012, reserved, "every job dispatched is reserved but the delayed, the debounced and the chain's second step")
	return end(tx)
}

// A function that the protocol calls with arguments known only when it runs is
// plpgsql, whose plans a session keeps: PostgreSQL 15 parses and plans a LANGUAGE sql
// body again in every statement that calls it (10_helpers.sql). Once a session has run
// each statement (plpgsql's first plans of a statement are custom ones), a round of the
// protocol runs no LANGUAGE sql function of pgq: the constant ones are folded when a
// plan is made.
func TestProtocolRunsNoLanguageSQLFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := protocolSession(t, func(string) {})
	// The calls of LANGUAGE sql functions of pgq so far: a backend keeps its function
	// statistics pending across transactions until it reports them, so a round's are
	// the difference between reads at its start and at its end, in its transaction.
	sqlCalls := func(tx pgx.Tx) map[string]int {
		rows, err := tx.Query(ctx, `
			SELECT p.proname::text, s.calls FROM pg_stat_xact_user_functions s JOIN pg_proc p ON p.oid = s.funcid
			WHERE p.pronamespace = 'pgq'::regnamespace AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql')`)
		require.NoError(t, err)
		calls := map[string]int{}
		for rows.Next() {
			var name string
			var n int
			require.NoError(t, rows.Scan(&name, &n))
			calls[name] = n
		}
		require.NoError(t, rows.Err())
		return calls
	}
	round := func() []string {
		var before map[string]int
		return runRound(t, conn, func(tx pgx.Tx) {
			_, err := tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
			require.NoError(t, err)
			before = sqlCalls(tx)
		}, func(tx pgx.Tx) []string {
			var ran []string
			for name, n := range sqlCalls(tx) {
				if n > before[name] {
					ran = append(ran, fmt.Sprintf("%s (%d calls)", name, n-before[name]))
				}
			}
			sort.Strings(ran)
			return ran
		})
	}
	for range 6 {
		round()
	}
	require.Empty(t, round(), "LANGUAGE sql functions of pgq a protocol round ran, planned again in every statement: make them plpgsql")
}

// A function runs its statements under the planner settings of its caller, where it
// sets none of its own, and plans them with those. No statement of a protocol round is
// planned at a cost of jit_above_cost's default (100,000) or more: with the planner's
// every way of running a join turned off (a caller's enable_nestloop = off, the
// callee's enable_hashjoin and enable_mergejoin = off), a statement costs 10^10, and
// where JIT is on, PostgreSQL compiles it again at every run (50-250 ms each). Every
// plan of every statement, nested ones too, is read from auto_explain.
func TestProtocolPlansNoStatementAtTheCostOfJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var plans []string
	conn := protocolSession(t, func(m string) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, m)
	})
	for _, s := range []string{
		`LOAD 'auto_explain'`,
		`SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_format = 'json'`,
		`SET client_min_messages = log`,
	} {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	runRound(t, conn, func(pgx.Tx) {}, func(pgx.Tx) struct{} { return struct{}{} })

	mu.Lock()
	defer mu.Unlock()
	costly := map[string]float64{}
	read := 0
	for _, m := range plans {
		_, text, ok := strings.Cut(m, "plan:\n")
		if !ok {
			continue
		}
		var p struct {
			Query string `json:"Query Text"`
			Plan  struct {
				TotalCost float64 `json:"Total Cost"`
			} `json:"Plan"`
		}
		require.NoError(t, json.Unmarshal([]byte(text), &p), text)
		read++
		if p.Plan.TotalCost >= 100000 {
			costly[strings.Join(strings.Fields(p.Query), " ")] = p.Plan.TotalCost
		}
	}
	require.Greater(t, read, 1000, "auto_explain logged the plans of the round's nested statements")
	require.Empty(t, costly, "statements planned at the cost of JIT")
}
