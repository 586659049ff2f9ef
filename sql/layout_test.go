package sql_test

// Tests of the SQL layout itself: one definition per function, the sqlc stand-ins of the
// composite types, the vocabulary shared by SQL and Go.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

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
