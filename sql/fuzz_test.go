package sql_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// Hostile input (S43, S44, S90-S92): pgq.dispatch, as a producer, and pgq.define_job, as an
// admin, either accept a call and leave a job or class a worker can handle, or refuse
// it with a clear SQLSTATE: a data exception (class 22), an integrity violation (23), a
// program limit (54), or for a handler a name that does not resolve (42601, 42602,
// 42883, 3F000) or may not be run (42501). Never an internal error, a PL/pgSQL error
// without a code of its own, a lost connection or a hang. What was accepted is then
// reserved and failed by a worker, which must work too. The seed corpus is in
// testdata/fuzz; CI runs each target for a bounded time (.ci/run).

// clearError reports whether err is one of the refusals a caller can act on, for the
// given extra codes.
func clearError(err error, extra ...string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "54":
		return true
	}
	for _, c := range extra {
		if pe.Code == c {
			return true
		}
	}
	return false
}

// fuzzWorker reserves the job with uuid id, if it is due, and fails it, as a worker
// would when its handler raised: the protocol must take whatever dispatch accepted.
func fuzzWorker(t *testing.T, worker *pgx.Conn, id uuid.UUID, queue string) {
	t.Helper()
	rows, err := worker.Query(ctx, `SELECT uuid, lease_token FROM pgq.reserve('fuzz', ARRAY[$1], 100, 1, now() + interval '100 years')`, queue)
	if err != nil {
		t.Fatalf("reserve after dispatch: %v", err)
	}
	type held struct{ UUID, Token uuid.UUID }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[held])
	if err != nil {
		t.Fatalf("reserve after dispatch: %v", err)
	}
	for _, h := range got {
		if _, err := worker.Exec(ctx, `SELECT * FROM pgq.fail($1, $2, 'fuzz', as_of => now() + interval '100 years')`, h.UUID, h.Token); err != nil {
			t.Fatalf("fail of job %s (dispatched as %s): %v", h.UUID, id, err)
		}
	}
}

// The ceilings FuzzDispatch runs under (S90, S91): the database's, for jobs with no
// class, and those of the class "known", which overrides them.
const (
	fuzzDBMaxTries, fuzzDBMaxRetryFor, fuzzDBMinBackoff, fuzzDBMaxTimeout             = 5, "1 hour", 1, 600
	fuzzKnownMaxTries, fuzzKnownMaxRetryFor, fuzzKnownMinBackoff, fuzzKnownMaxTimeout = 3, "10 minutes", 2, 100
)

// FuzzDispatch: what a producer's dispatch accepts keeps within the ceilings of its
// class or, with none, of the database (S90, S91), and within what the server can run
// (S92): tries, max_exceptions (a deadline beyond the class's gets one), the deadline,
// each backoff entry and the timeout. Everything else is refused with a clear code.
func FuzzDispatch(f *testing.F) {
	db := pgqtest.New(f)
	db.Exec(f, fmt.Sprintf(`SELECT pgq.define_job('known', tries => 1, timeout => 50,
		max_tries => %d, max_retry_for => '%s', min_backoff => %d, max_timeout => %d)`,
		fuzzKnownMaxTries, fuzzKnownMaxRetryFor, fuzzKnownMinBackoff, fuzzKnownMaxTimeout))
	dbName := pgx.Identifier{pgqtest.Scalar[string](f, db, `SELECT current_database()`)}.Sanitize()
	db.Exec(f, fmt.Sprintf(`ALTER DATABASE %[1]s SET pgq.max_tries = %[2]d; ALTER DATABASE %[1]s SET pgq.max_retry_for = '%[3]s';
		ALTER DATABASE %[1]s SET pgq.min_backoff = %[4]d; ALTER DATABASE %[1]s SET pgq.max_timeout = %[5]d`,
		dbName, fuzzDBMaxTries, fuzzDBMaxRetryFor, fuzzDBMinBackoff, fuzzDBMaxTimeout))
	producer := db.ConnAs(f, pgqtest.ProducerRole)
	worker := db.ConnAs(f, pgqtest.WorkerRole)
	f.Add("known", `{"product_id": 88}`, "", int64(0), int64(0), int64(0), "", "", "", "", "", "", "")
	f.Add("", `null`, "q", int64(-1), int64(-1), int64(-1), "k", "", "-1", "{}", "-1 day", "", "-1")
	f.Add("odd job\x00name", `{"a": "\u0000"}`, "", int64(101), int64(2147483648), int64(9223372036854775807), "", "d", "", "", "", "", "")
	f.Add(strings.Repeat("j", 10000), strings.Repeat("[", 5000)+strings.Repeat("]", 5000), "", int64(-100), int64(1), int64(1), "", "", "", "", "", "", "")
	f.Add("known", `{"s": "\xff\xfe"}`, "\xff", int64(100), int64(3600), int64(-9223372036854775808), "\xc3", "", "", "", "", "", "")
	f.Add("known", `[1e999999, -0, 1.5e-400]`, "", int64(0), int64(0), int64(315569520000), strings.Repeat("k", 2000), "", "", "", "", "", "")
	// The retry storm (no limit, no backoff), an endless deadline, and options at and
	// past their ceilings, with a class and without.
	f.Add("known", `{}`, "", int64(0), int64(0), int64(0), "", "", "0", "{0}", "", "", "")
	f.Add("failer", `{}`, "", int64(0), int64(0), int64(0), "", "", "0", "{0}", "", "", "")
	f.Add("failer", `{}`, "", int64(0), int64(0), int64(0), "", "", "", "", "", "infinity", "")
	f.Add("known", `{}`, "", int64(5), int64(100), int64(1), "", "", "3", "{2,5}", "10 minutes", "", "3")
	f.Add("known", `{}`, "", int64(5), int64(101), int64(1), "", "", "4", "{1}", "11 minutes", "", "4")
	f.Add("failer", `{}`, "", int64(0), int64(600), int64(0), "", "", "5", "{1,1,1}", "", "2030-01-01 00:00:00+00", "5")
	f.Add("failer", `{}`, "", int64(0), int64(2147484), int64(0), "", "", "6", "{0}", "59 minutes", "", "6")
	f.Add("failer", `{}`, "", int64(0), int64(0), int64(0), "u", "", "", "", "", "-infinity", "")
	f.Fuzz(func(t *testing.T, job, payload, queue string, priority, timeout, delaySecs int64, uniqueKey, debounceKey,
		tries, backoff, retryFor, retryUntil, maxExceptions string) {
		var id uuid.NullUUID
		err := producer.QueryRow(ctx, `SELECT pgq.dispatch($1, $2::text::jsonb, queue => nullif($3, ''), priority => $4::bigint::int,
				timeout => nullif($5::bigint, 0)::int, delay => make_interval(secs => $6),
				unique_key => nullif($7, ''), unique_for => CASE WHEN $7 <> '' THEN interval '1 minute' END,
				debounce_key => nullif($8, ''), debounce_for => CASE WHEN $8 <> '' THEN interval '1 second' END,
				tries => nullif($9, '')::int, backoff => nullif($10, '')::int[], retry_for => nullif($11, '')::interval,
				retry_until => nullif($12, '')::timestamptz, max_exceptions => nullif($13, '')::int)`,
			job, payload, queue, priority, timeout, float64(delaySecs), uniqueKey, debounceKey,
			tries, backoff, retryFor, retryUntil, maxExceptions).Scan(&id)
		call := fmt.Sprintf("dispatch(%q, %q, queue %q, priority %d, timeout %d, delay %d, tries %q, backoff %q, retry_for %q, retry_until %q, max_exceptions %q)",
			job, payload, queue, priority, timeout, delaySecs, tries, backoff, retryFor, retryUntil, maxExceptions)
		if err != nil {
			if !clearError(err) {
				t.Fatalf("%s: %v", call, err)
			}
			return
		}
		if !id.Valid {
			return // dropped as a duplicate of a unique job
		}
		var q string
		if err := db.Pool.QueryRow(ctx, `SELECT queue FROM pgq.jobs WHERE uuid = $1 AND job = $2 AND priority = $3`, id.UUID, job, priority).Scan(&q); err != nil {
			t.Fatalf("%s returned %s but no such job with priority %d: %v", call, id.UUID, priority, err)
		}
		maxTries, maxRetryFor, minBackoff, maxTimeout := fuzzDBMaxTries, fuzzDBMaxRetryFor, fuzzDBMinBackoff, fuzzDBMaxTimeout
		if job == "known" {
			maxTries, maxRetryFor, minBackoff, maxTimeout = fuzzKnownMaxTries, fuzzKnownMaxRetryFor, fuzzKnownMinBackoff, fuzzKnownMaxTimeout
		}
		var escaped string
		if err := db.Pool.QueryRow(ctx, `SELECT concat_ws('; ',
				CASE WHEN $2 AND j.tries NOT BETWEEN 1 AND $3 THEN format('tries %s', j.tries) END,
				CASE WHEN $4 AND (j.retry_until > j.created_at + $5::interval OR j.max_exceptions IS NULL OR j.max_exceptions > $3)
				     THEN format('deadline %s after %s with max_exceptions %s', j.retry_until, j.created_at, j.max_exceptions) END,
				CASE WHEN $6 AND j.max_exceptions > $3 THEN format('max_exceptions %s', j.max_exceptions) END,
				CASE WHEN $7 AND EXISTS (SELECT FROM unnest(j.backoff) b WHERE b < $8) THEN format('backoff %s', j.backoff) END,
				CASE WHEN j.timeout > $9 AND $10 THEN format('timeout %s', j.timeout) END,
				CASE WHEN j.timeout > 2147483 THEN format('timeout %s, beyond statement_timeout', j.timeout) END)
			FROM pgq.jobs j WHERE j.uuid = $1`,
			id.UUID, tries != "", maxTries, retryFor != "" || retryUntil != "", maxRetryFor, maxExceptions != "",
			backoff != "", minBackoff, maxTimeout, timeout != 0).Scan(&escaped); err != nil {
			t.Fatalf("%s: reading job %s: %v", call, id.UUID, err)
		}
		if escaped != "" {
			t.Fatalf("%s was accepted past its ceilings: %s", call, escaped)
		}
		fuzzWorker(t, worker, id.UUID, q)
	})
}

func FuzzDefineJob(f *testing.F) {
	db := pgqtest.New(f)
	db.Exec(f, `CREATE FUNCTION public.handler(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	admin := db.ConnAs(f, pgqtest.AdminRole)
	producer := db.ConnAs(f, pgqtest.ProducerRole)
	worker := db.ConnAs(f, pgqtest.WorkerRole)
	f.Add("sync", "public.handler", int64(3), "{1,2,3}", int64(60), "1 hour", `[{"rate_limited": {"limit": "nope"}}]`, "{a}")
	f.Add("", "", int64(-1), "{}", int64(0), "", "null", "{}")
	f.Add("x", "handler", int64(0), "{-1}", int64(-5), "-1 day", `[{"without_overlapping": {"key": "k", "release_after": -1}}]`, "{NULL}")
	f.Add("x\x00y", "public.\"handler\"", int64(2147483648), "{"+strings.Repeat("1,", 9999)+"1}", int64(9223372036854775807), "178000000 years", `{}`, "{a,b,c}")
	f.Add("\xff", "pg_catalog.pg_sleep", int64(1), "{2147483647}", int64(1), "1 microsecond",
		`[{"throttles_exceptions": {"max_exceptions": 1, "decay": 60, "when": "(([a-z]+)\\2)+x"}}]`, "{"+strings.Repeat("k,", 1000)+"k}")
	f.Add("deep", "nosuch.fn", int64(1), "{0}", int64(1), "infinity", strings.Repeat(`[`, 3000)+strings.Repeat(`]`, 3000), "{}")
	f.Fuzz(func(t *testing.T, name, handler string, tries int64, backoff string, timeout int64, uniqueFor, middleware, uniqueBy string) {
		_, err := admin.Exec(ctx, `SELECT pgq.define_job($1, handler => nullif($2, ''), tries => $3::bigint::int, backoff => $4::int[],
				timeout => nullif($5::bigint, 0)::int, unique_for => nullif($6, '')::interval, middleware => $7::text::jsonb,
				unique_by => $8::text[])`,
			name, handler, tries, backoff, timeout, uniqueFor, middleware, uniqueBy)
		if err != nil {
			if !clearError(err, "42601", "42602", "42883", "3F000", "42501") {
				t.Fatalf("define_job(%q, handler %q, tries %d, backoff %.40q, timeout %d, unique_for %q, middleware %.80q, unique_by %.40q): %v",
					name, handler, tries, backoff, timeout, uniqueFor, middleware, uniqueBy, err)
			}
			return
		}
		// A class that was accepted takes a dispatch, and its job a worker.
		var id uuid.NullUUID
		err = producer.QueryRow(ctx, `SELECT pgq.dispatch($1, '{"a": 1, "b": "x"}')`, name).Scan(&id)
		if err != nil {
			if !clearError(err) {
				t.Fatalf("dispatch of accepted class %q: %v", name, err)
			}
			return
		}
		if id.Valid {
			fuzzWorker(t, worker, id.UUID, pgqtest.Scalar[string](t, db, `SELECT queue FROM pgq.jobs WHERE uuid = $1`, id.UUID))
		}
	})
}

// FuzzDispatchMiddleware: a producer's middleware, with a payload for its keys, is
// either refused with a clear code or accepted within the bounds of S98 (entries, "by"
// fields, key bytes); an accepted job is then reserved by a worker under a 5 s
// statement_timeout, far above what a bounded job's admission costs, and the reserve
// must not fail (S38, S98).
func FuzzDispatchMiddleware(f *testing.F) {
	db := pgqtest.New(f)
	db.Exec(f, `SELECT pgq.define_limit('api', 1000, '1 minute')`)
	producer := db.ConnAs(f, pgqtest.ProducerRole)
	worker := db.ConnAs(f, pgqtest.WorkerRole)
	f.Add(`[{"without_overlapping": {"key": "k"}}]`, `{}`)
	f.Add(`[{"without_overlapping": {"by": ["a", "b"]}}, {"rate_limited": {"limit": "api", "by": ["a"]}}]`, `{"a": 1, "b": "x"}`)
	f.Add(`[{"throttles_exceptions": {"max_exceptions": 2, "decay": 60, "by": ["t"], "when": "^5\\d\\d"}}]`, `{"t": [1, {"x": null}]}`)
	f.Add(`[`+strings.Repeat(`{"without_overlapping": {"by": ["a"]}},`, 8)+`{"rate_limited": {"limit": "api"}}]`, `{"a": "`+strings.Repeat("z", 600)+`"}`)
	f.Add(`[{"rate_limited": {"limit": "api", "by": ["a","b","c","d","e","f","g","h","i"]}}]`, `{"a": 1}`)
	f.Add(`[{"without_overlapping": {"key": "`+strings.Repeat("k", 999)+`"}}, {"without_overlapping": {"key": "`+strings.Repeat("k", 999)+`"}}]`, `{}`)
	f.Add(`[{"without_overlapping": {"by": ["a"], "expire_after": 1, "release_after": 2147483647, "shared": true}}]`, `{"a": "\u0000"}`)
	f.Fuzz(func(t *testing.T, middleware, payload string) {
		var id uuid.NullUUID
		err := producer.QueryRow(ctx, `SELECT pgq.dispatch('mw', $2::text::jsonb, middleware => $1::text::jsonb)`, middleware, payload).Scan(&id)
		call := fmt.Sprintf("dispatch('mw', %.200q, middleware => %.300q)", payload, middleware)
		if err != nil {
			if !clearError(err) {
				t.Fatalf("%s: %v", call, err)
			}
			return
		}
		var entries, maxBy, keyBytes int
		if err := db.Pool.QueryRow(ctx, `SELECT jsonb_array_length(j.middleware),
				coalesce((SELECT max(jsonb_array_length(m.value -> 'by')) FROM jsonb_array_elements(j.middleware) e, jsonb_each(e) m
				          WHERE jsonb_typeof(m.value -> 'by') = 'array'), 0),
				coalesce((SELECT sum(octet_length(k)) FROM jsonb_array_elements_text(j.middleware_keys) k), 0)
			FROM pgq.jobs j WHERE j.uuid = $1`, id.UUID).Scan(&entries, &maxBy, &keyBytes); err != nil {
			t.Fatalf("%s: reading job %s: %v", call, id.UUID, err)
		}
		if entries > 8 || maxBy > 8 || keyBytes > 4000 {
			t.Fatalf("%s was accepted past the bounds: %d entries, %d by fields, %d key bytes", call, entries, maxBy, keyBytes)
		}
		tx, err := worker.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the reserve's leases, locks and windows go with it
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '5s'`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT * FROM pgq.reserve('fuzz', '{default}', 100)`); err != nil {
			t.Fatalf("reserve after %s: %v", call, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		db.Exec(t, `DELETE FROM pgq.jobs WHERE uuid = $1`, id.UUID)
	})
}
