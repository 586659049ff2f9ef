package sql_test

// Tests of the SQL layout itself: one definition per function, the sqlc stand-ins of the
// composite types, the vocabulary shared by SQL and Go.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

var definition = regexp.MustCompile(`(?i)CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|VIEW|TRIGGER)\s+pgq\.(\w+)\s*[(\s]`)

// Every function and view has exactly one definition in the source tree, in
// sql/functions/ (sql/schema.sql, the generated snapshot, aside), and a migrated
// database holds exactly those, each documented with a COMMENT.
func TestOneDefinitionPerFunction(t *testing.T) {
	t.Parallel()
	where := map[string][]string{} // object -> files defining it
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") || path == "schema.sql" {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range definition.FindAllStringSubmatch(string(b), -1) {
			where[strings.ToLower(m[2])] = append(where[strings.ToLower(m[2])], path)
		}
		return err
	})
	require.NoError(t, err)
	var defined []string
	for name, files := range where {
		require.Len(t, files, 1, "pgq.%s is defined in %v", name, files)
		require.True(t, strings.HasPrefix(files[0], "functions/"), "pgq.%s is defined in %s, not under sql/functions/", name, files[0])
		defined = append(defined, name)
	}
	sort.Strings(defined)

	db := pgqtest.New(t)
	inDB := pgqtest.Scalar[[]string](t, db, `
		SELECT array_agg(DISTINCT name ORDER BY name) FROM (
			SELECT p.proname::text AS name FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace
			UNION ALL
			SELECT c.relname::text FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind = 'v'
		) o`)
	require.Equal(t, defined, inDB, "a migrated database holds exactly the functions and views of sql/functions/")
	undocumented := pgqtest.Scalar[[]string](t, db, `
		SELECT coalesce(array_agg(o.name ORDER BY o.name), '{}') FROM (
			SELECT p.oid::regprocedure::text AS name, obj_description(p.oid, 'pg_proc') AS doc
			FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace
			UNION ALL
			SELECT c.oid::regclass::text, obj_description(c.oid, 'pg_class')
			FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'v')
		) o WHERE o.doc IS NULL`)
	require.Empty(t, undocumented, "every function, table and view has a COMMENT (\\df+ and \\d+ document the API)")
}

// sqlc cannot read composite types, so sql/sqlc/composite_types.sql restates each as a
// table for it; the stand-ins must have the types' columns, in order, with their types.
func TestSQLCTypesMatchCompositeTypes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	standIns, err := os.ReadFile("sqlc/composite_types.sql")
	require.NoError(t, err)
	db.Exec(t, `CREATE SCHEMA sqlc_standins`)
	db.Exec(t, strings.ReplaceAll(string(standIns), "CREATE TABLE pgq.", "CREATE TABLE sqlc_standins."))
	tables := pgqtest.Scalar[[]string](t, db,
		`SELECT array_agg(relname::text ORDER BY relname) FROM pg_class WHERE relnamespace = 'sqlc_standins'::regnamespace AND relkind = 'r'`)
	require.NotEmpty(t, tables)
	columns := func(typ string) []string {
		return pgqtest.Scalar[[]string](t, db, `
			SELECT array_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
			FROM pg_attribute a WHERE a.attrelid = (SELECT typrelid FROM pg_type WHERE oid = $1::regtype)
			  AND a.attnum > 0 AND NOT a.attisdropped`, typ)
	}
	for _, table := range tables {
		require.Equal(t, columns("pgq."+table), columns("sqlc_standins."+table), "stand-in of pgq.%s", table)
	}
}

// The outcome values are named once: the CHECK constraint of pgq.attempts.outcome, which
// pgq.Outcomes mirrors, and the pickup enum, whose values are outcomes too.
func TestOutcomesMatchTheSchema(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	check := pgqtest.Scalar[string](t, db,
		`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'attempts_outcome_check' AND conrelid = 'pgq.attempts'::regclass`)
	var inSchema []pgq.Outcome
	for _, m := range regexp.MustCompile(`'(\w+)'::text`).FindAllStringSubmatch(check, -1) {
		inSchema = append(inSchema, pgq.Outcome(m[1]))
	}
	require.Equal(t, inSchema, pgq.Outcomes)

	pickups := pgqtest.Scalar[[]string](t, db, `SELECT enum_range(NULL::pgq.pickup)::text[]`)
	generated := []dbsqlc.PgqPickup{dbsqlc.PgqPickupTurnedAway, dbsqlc.PgqPickupExhausted, dbsqlc.PgqPickupDebounced, dbsqlc.PgqPickupFailed, dbsqlc.PgqPickupCancelled}
	require.Len(t, generated, len(pickups))
	for i, p := range pickups {
		require.Equal(t, p, string(generated[i]))
		require.True(t, slices.Contains(pgq.Outcomes, pgq.Outcome(p)), "pickup %s is an outcome", p)
	}
}

// A function that the protocol calls with arguments known only when it runs is
// plpgsql, whose plans a session keeps: PostgreSQL 15 parses and plans a LANGUAGE sql
// body again in every statement that calls it (10_helpers.sql). Once a session has run
// each statement a few times (plpgsql's first plans are custom ones), a round of the
// protocol (dispatches of every kind, into a fair queue too, a reserve, heartbeats, a
// SQL job, complete, fail, release) runs no LANGUAGE sql function of pgq: the constant
// ones are folded when a plan is made.
func TestProtocolRunsNoLanguageSQLFunction(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_queue('fq', fair_by => 'tenant')`)
	db.Exec(t, `SELECT pgq.define_limit('api', 1000000, '1 hour'); SELECT pgq.define_concurrency('vendor', 100)`)
	db.Exec(t, `SELECT pgq.define_job('mw', middleware => '[{"concurrency_limited": {"by": ["account"], "limit": 2}},
		{"concurrency_limited": {"limit": "vendor"}}, {"rate_limited": {"limit": "api"}},
		{"without_overlapping": {"key": "k"}}, {"throttles_exceptions": {}}]')`)
	db.Exec(t, `CREATE FUNCTION public.handle(p jsonb) RETURNS void LANGUAGE plpgsql AS 'BEGIN END'`)
	db.Exec(t, `SELECT pgq.define_job('sqlj', handler => 'public.handle')`)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	// Generic plans only: a custom plan, made anew for each call, calls the constant
	// functions it folds, which says nothing of what a plan runs.
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	// Made once, outside the rounds, which run the protocol only.
	_, err = conn.Exec(ctx, `CREATE TEMP TABLE r AS SELECT * FROM pgq.reserve('w', '{none}', 1) WITH NO DATA`)
	require.NoError(t, err)
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
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
		require.NoError(t, err)
		before := sqlCalls(tx)
		for _, s := range []string{
			`SELECT pgq.dispatch('f', '{"tenant": "a"}', queue => 'fq')`,
			`SELECT pgq.dispatch_many('f', ARRAY['{"tenant": "a"}', '{"tenant": "b"}']::jsonb[], queue => 'fq')`,
			`SELECT pgq.dispatch('f', '{"tenant": "c"}', queue => 'fq', delay => '1 hour')`,
			`SELECT pgq.dispatch('plain')`,
			`SELECT count(*) FROM pgq.dispatch_many('plain', array_fill('{}'::jsonb, ARRAY[1000]))`,
			`SELECT pgq.dispatch('plain', unique_key => 'u', unique_for => '1 hour')`,
			`SELECT pgq.dispatch('plain', debounce_key => 'd', debounce_for => '1 second')`,
			`SELECT pgq.dispatch('mw', '{"account": 1}')`,
			`SELECT pgq.dispatch('sqlj')`,
			`SET CONSTRAINTS ALL IMMEDIATE`, // the turns of new keys, made at commit
			`INSERT INTO r SELECT * FROM pgq.reserve('w', '{fq,default}', 2000)`,
			`SELECT count(*) FROM pgq.heartbeat(ARRAY(SELECT uuid FROM r), ARRAY(SELECT lease_token FROM r))`,
			`SELECT pgq.run_sql_job(uuid, lease_token) FROM r WHERE job = 'sqlj'`,
			`SELECT count(*) FROM r, pgq.fail(r.uuid, r.lease_token, 'boom') WHERE r.job = 'mw'`,
			`SELECT count(*) FROM r, pgq.release(r.uuid, r.lease_token, 10) WHERE r.job = 'f'`,
			`SELECT count(*) FROM pgq.complete(ARRAY(SELECT uuid FROM r WHERE job = 'plain'), ARRAY(SELECT lease_token FROM r WHERE job = 'plain'))`,
		} {
			_, err := tx.Exec(ctx, s)
			require.NoError(t, err, s)
		}
		var ran []string
		for name, n := range sqlCalls(tx) {
			if n > before[name] {
				ran = append(ran, fmt.Sprintf("%s (%d calls)", name, n-before[name]))
			}
		}
		sort.Strings(ran)
		var reserved int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM r`).Scan(&reserved))
		require.Equal(t, 1007, reserved, "every job dispatched but the delayed one is reserved")
		return ran
	}
	for range 6 {
		round()
	}
	require.Empty(t, round(), "LANGUAGE sql functions of pgq a protocol round ran, planned again in every statement: make them plpgsql")
}
