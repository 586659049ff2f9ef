package sql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// Hostile input (S43, S44): pgq.dispatch, as a producer, and pgq.define_job, as an
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

func FuzzDispatch(f *testing.F) {
	db := pgqtest.New(f)
	db.Exec(f, `SELECT pgq.define_job('known', tries => 1)`)
	producer := db.ConnAs(f, pgqtest.ProducerRole)
	worker := db.ConnAs(f, pgqtest.WorkerRole)
	f.Add("known", `{"product_id": 88}`, "", int64(0), int64(0), int64(0), "", "")
	f.Add("", `null`, "q", int64(-1), int64(-1), int64(-1), "k", "")
	f.Add("odd job\x00name", `{"a": "\u0000"}`, "", int64(101), int64(2147483648), int64(9223372036854775807), "", "d")
	f.Add(strings.Repeat("j", 10000), strings.Repeat("[", 5000)+strings.Repeat("]", 5000), "", int64(-100), int64(1), int64(1), "", "")
	f.Add("known", `{"s": "\xff\xfe"}`, "\xff", int64(100), int64(3600), int64(-9223372036854775808), "\xc3", "")
	f.Add("known", `[1e999999, -0, 1.5e-400]`, "", int64(0), int64(0), int64(315569520000), strings.Repeat("k", 2000), "")
	f.Fuzz(func(t *testing.T, job, payload, queue string, priority, timeout, delaySecs int64, uniqueKey, debounceKey string) {
		var id uuid.NullUUID
		err := producer.QueryRow(ctx, `SELECT pgq.dispatch($1, $2::text::jsonb, queue => nullif($3, ''), priority => $4::bigint::int,
				timeout => nullif($5::bigint, 0)::int, delay => make_interval(secs => $6),
				unique_key => nullif($7, ''), unique_for => '1 minute',
				debounce_key => nullif($8, ''), debounce_for => '1 second')`,
			job, payload, queue, priority, timeout, float64(delaySecs), uniqueKey, debounceKey).Scan(&id)
		if err != nil {
			if !clearError(err) {
				t.Fatalf("dispatch(%q, %q, queue %q, priority %d, timeout %d, delay %d): %v", job, payload, queue, priority, timeout, delaySecs, err)
			}
			return
		}
		if !id.Valid {
			return // dropped as a duplicate of a unique job
		}
		var q string
		if err := db.Pool.QueryRow(ctx, `SELECT queue FROM pgq.jobs WHERE uuid = $1 AND job = $2 AND priority = $3`, id.UUID, job, priority).Scan(&q); err != nil {
			t.Fatalf("dispatch(%q) returned %s but no such job with priority %d: %v", job, id.UUID, priority, err)
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
