package sql_test

// What a producer may choose (S90, S91), what the server can run (S92), who may add to
// a batch (S93) and what a callback_failed event tells (S94), each as the role that
// does it: a producer's login, the worker's, an admin's.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// setDatabase sets pgq.<name> for the test's database as an admin would (S91).
func setDatabase(t *testing.T, db *pgqtest.DB, name, value string) {
	t.Helper()
	dbName := pgqtest.Scalar[string](t, db, `SELECT current_database()`)
	db.Exec(t, fmt.Sprintf(`ALTER DATABASE %s SET pgq.%s = '%s'`, pgx.Identifier{dbName}.Sanitize(), name, value))
}

// S90: a dispatch may set its options looser than its class's own only up to the
// class's ceilings, or the database's where the class declares none; it may always set
// them tighter. A retry storm (tries 0, no backoff) and an endless deadline
// are refused; so are they from a batch, a chain's later step or dispatch_many. An
// admin may dispatch past the ceilings.
func TestS90ADispatchLoosensItsClassOnlyToItsCeilings(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('failer', tries => 2, backoff => '{10}', timeout => 30, max_exceptions => 2)`)
	db.Exec(t, `SELECT pgq.define_job('capped', tries => 2, timeout => 30, retry_for => '10 minutes',
		max_tries => 5, max_retry_for => '1 hour', min_backoff => 5, max_timeout => 120)`)
	db.Exec(t, `SELECT pgq.define_job('open', tries => 1, max_tries => 0)`)
	producer := db.ConnAs(t, pgqtest.ProducerRole)

	cases := []struct{ name, args, refused string }{
		{"UnlimitedTriesNoBackoff", `'failer', tries => 0, backoff => '{0}'`,
			"a dispatch of failer may not set tries 0 (unlimited): its ceiling is max_tries 25"},
		{"EndlessDeadline", `'failer', retry_until => 'infinity'`,
			"may not set a retry deadline of infinity: its ceiling is max_retry_for 1 day from now"},
		{"TriesWithinTheDatabaseCeiling", `'failer', tries => 25`, ""},
		{"TriesPastTheDatabaseCeiling", `'failer', tries => 26`, "tries 26: its ceiling is max_tries 25"},
		{"FewerTries", `'capped', tries => 1`, ""},
		{"TriesWithinTheClassCeiling", `'capped', tries => 5`, ""},
		{"TriesPastTheClassCeiling", `'capped', tries => 6`, "tries 6: its ceiling is max_tries 5"},
		{"UnlimitedTriesUnderACeilingOf0", `'open', tries => 0`, ""},
		{"ShorterDeadline", `'capped', retry_for => '5 minutes'`, ""},
		{"DeadlineWithinTheCeiling", `'capped', retry_for => '1 hour'`, ""},
		{"DeadlinePastTheCeiling", `'capped', retry_for => '61 minutes'`, "its ceiling is max_retry_for 01:00:00 from now"},
		{"DeadlinePastTheCeilingAsATime", `'capped', retry_until => now() + interval '2 hours'`, "its ceiling is max_retry_for 01:00:00"},
		{"FewerExceptions", `'failer', max_exceptions => 1`, ""},
		{"MoreExceptionsWithinTheCeiling", `'failer', max_exceptions => 25`, ""},
		{"MoreExceptionsPastTheCeiling", `'failer', max_exceptions => 26`, "max_exceptions 26: its ceiling is max_tries 25"},
		{"BackoffAboveTheFloor", `'capped', backoff => '{5,60}'`, ""},
		{"BackoffBelowTheFloor", `'capped', backoff => '{60,4}'`, "backoff {60,4}: its ceiling is min_backoff 5 seconds"},
		{"ShorterBackoffWithNoFloor", `'failer', backoff => '{0}'`, ""},
		{"ShorterTimeout", `'failer', timeout => 10`, ""},
		{"LongerTimeoutWithinTheDatabaseCeiling", `'failer', timeout => 3600`, ""},
		{"LongerTimeoutPastTheDatabaseCeiling", `'failer', timeout => 3601`, "timeout 3601: its ceiling is max_timeout 3600 seconds"},
		{"LongerTimeoutPastTheClassCeiling", `'capped', timeout => 121`, "its ceiling is max_timeout 120 seconds"},
		{"NoClass", `'classless', tries => 0`, "a dispatch of classless may not set tries 0 (unlimited): its ceiling is max_tries 25"},
	}
	accepted := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var id uuid.UUID
			err := producer.QueryRow(ctx, `SELECT pgq.dispatch(`+c.args+`)`).Scan(&id)
			if c.refused == "" {
				require.NoError(t, err)
				accepted++
				return
			}
			require.Equal(t, "22023", pgCode(err), "%v", err)
			require.Contains(t, err.Error(), c.refused)
		})
	}
	require.Equal(t, accepted, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`), "a refused dispatch writes nothing")
	require.Equal(t, []int{1, 5, 2, 2, 2}, pgqtest.Scalar[[]int](t, db,
		`SELECT array_agg(tries ORDER BY id) FROM pgq.jobs WHERE job = 'capped'`), "the dispatch's own tries are frozen (S1)")

	// Every way a producer dispatches goes through the same check.
	for _, call := range []string{
		`SELECT pgq.dispatch_many('failer', ARRAY['{}'::jsonb], tries => 0)`,
		`SELECT pgq.dispatch_batch('[{"job": "failer", "tries": 0}]')`,
		`SELECT pgq.dispatch_chain('[{"job": "failer"}, {"job": "failer", "retry_until": "infinity"}]')`,
	} {
		_, err := producer.Exec(ctx, call)
		require.Equal(t, "22023", pgCode(err), "%s: %v", call, err)
	}

	// The README's example.
	db.Exec(t, `SELECT pgq.define_job('sync', tries => 3, max_tries => 3)`)
	_, err := producer.Exec(ctx, `SELECT pgq.dispatch('sync', tries => 0)`)
	require.EqualError(t, err, "ERROR: pgq: a dispatch of sync may not set tries 0 (unlimited): its ceiling is max_tries 3 (SQLSTATE 22023)")

	// A role that may define classes may dispatch anything it could declare on one.
	const past = `SELECT pgq.dispatch('capped', tries => 0, backoff => '{0}', retry_until => 'infinity', timeout => 86400)`
	_, err = db.ConnAs(t, pgqtest.AdminProducerRole).Exec(ctx, past)
	require.NoError(t, err, "an admin that dispatches")
	_, err = db.Pool.Exec(ctx, past)
	require.NoError(t, err, "a superuser")
	require.Nil(t, pgqtest.Scalar[*int](t, db, `SELECT max_exceptions FROM pgq.jobs WHERE retry_until = 'infinity' LIMIT 1`),
		"an admin's deadline keeps its attempts")
}

// S90: a deadline that a dispatch sets beyond its class's own buys time, not attempts:
// with no backoff, the job fails at its max_tries-th exception, long before its
// deadline. A deadline within the class's own, or an admin's, changes nothing.
func TestS90ADeadlineBuysTimeNotAttempts(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('capped', tries => 2, max_tries => 5)`)
	db.Exec(t, `SELECT pgq.define_job('windowed', retry_for => '1 hour')`)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	var storm, fewer, within uuid.UUID
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('capped', retry_for => '1 hour', backoff => '{0}')`).Scan(&storm))
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('capped', retry_for => '1 hour', max_exceptions => 3)`).Scan(&fewer))
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch('windowed', retry_for => '30 minutes')`).Scan(&within))
	maxExceptions := func(id uuid.UUID) *int {
		return pgqtest.Scalar[*int](t, db, `SELECT max_exceptions FROM pgq.jobs WHERE uuid = $1`, id)
	}
	require.Equal(t, 5, *maxExceptions(storm), "max_tries of the class")
	require.Equal(t, 3, *maxExceptions(fewer), "the dispatch's own, tighter")
	require.Nil(t, maxExceptions(within), "a deadline within the class's own is the class's")

	db.Exec(t, `UPDATE pgq.jobs SET available_at = 'infinity' WHERE uuid <> $1`, storm)
	for i := 1; i <= 5; i++ {
		r := reserveOne(t, db, clock())
		require.Equal(t, storm, r.UUID)
		res := fail(t, db, r, "vendor 500", false, clock())
		require.Equal(t, i == 5, res.Final, "exception %d", i)
	}
	require.Equal(t, 5, pgqtest.Scalar[int](t, db, `SELECT attempts FROM pgq.failed_jobs WHERE uuid = $1`, storm))
}

// S90: a chain's later steps were checked when the chain was dispatched, and are queued
// in a worker's transaction with their options as they were; a schedule's options are
// an admin's, and a worker fires them as they are.
func TestS90ChainStepsAndSchedulesKeepTheOptionsTheirAuthorChose(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	_, err := producer.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "step"}, {"job": "step", "tries": 20}]')`)
	require.NoError(t, err)
	setDatabase(t, db, "max_tries", "3")
	_, err = producer.Exec(ctx, `SELECT pgq.dispatch_chain('[{"job": "step"}, {"job": "step", "tries": 20}]')`)
	require.Equal(t, "22023", pgCode(err), "the ceiling applies to chains dispatched from now on: %v", err)

	var id, token uuid.UUID
	require.NoError(t, db.WorkerPool.QueryRow(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w1', '{default}', 1)`).Scan(&id, &token))
	_, err = db.WorkerPool.Exec(ctx, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, id, token)
	require.NoError(t, err)
	require.Equal(t, 20, pgqtest.Scalar[int](t, db, `SELECT tries FROM pgq.jobs WHERE job = 'step'`), "step 2 queued as dispatched")

	db.Exec(t, `SELECT pgq.schedule('s', '@daily', 'report', tries => 0, backoff => '{0}')`)
	require.True(t, planSchedule(t, db, "s", 1, t0))
	ids := fireSchedule(t, db.WorkerPool, "s", 1, t0, []time.Time{t0}, t0.Add(24*time.Hour), 0, t0)
	require.Len(t, ids, 1)
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT tries FROM pgq.jobs WHERE uuid = $1`, ids[0]))
}

// S91: the database's ceilings are what ALTER DATABASE set, defaults otherwise; a
// producer's own SET, or a setting of its role, changes nothing. A setting pgq cannot
// read refuses the dispatches that need it, naming it.
func TestS91TheDatabaseCeilingsAreTheAdminsNotTheSessions(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	check := func(args, refused string) {
		t.Helper()
		_, err := producer.Exec(ctx, `SELECT pgq.dispatch('classless', `+args+`)`)
		if refused == "" {
			require.NoError(t, err, args)
			return
		}
		require.Equal(t, "22023", pgCode(err), "%s: %v", args, err)
		require.Contains(t, err.Error(), refused, args)
	}
	// The defaults.
	check(`tries => 25`, "")
	check(`tries => 26`, "max_tries 25")
	check(`retry_for => '1 day'`, "")
	check(`retry_for => '25 hours'`, "max_retry_for 1 day")
	check(`backoff => '{0}'`, "")
	check(`timeout => 3600`, "")
	check(`timeout => 3601`, "max_timeout 3600")

	setDatabase(t, db, "max_tries", "3")
	setDatabase(t, db, "max_retry_for", "10 minutes")
	setDatabase(t, db, "min_backoff", "2")
	setDatabase(t, db, "max_timeout", "60")
	check(`tries => 3`, "")
	check(`tries => 4`, "max_tries 3")
	check(`tries => 0`, "max_tries 3")
	check(`retry_for => '11 minutes'`, "max_retry_for 00:10:00")
	check(`backoff => '{2,1}'`, "min_backoff 2 seconds")
	check(`backoff => '{2,3}'`, "")
	check(`timeout => 61`, "max_timeout 60")

	_, err := producer.Exec(ctx, `SET pgq.max_tries = 0`)
	require.NoError(t, err)
	check(`tries => 0`, "max_tries 3")
	db.Exec(t, fmt.Sprintf(`ALTER ROLE %s IN DATABASE %s SET pgq.max_tries = 0`, pgqtest.ProducerRole,
		pgx.Identifier{pgqtest.Scalar[string](t, db, `SELECT current_database()`)}.Sanitize()))
	producer = db.ConnAs(t, pgqtest.ProducerRole)
	require.Equal(t, "0", pgqtest.Setting(t, producer, "pgq.max_tries"), "the role's setting is the session's")
	check(`tries => 0`, "max_tries 3")

	setDatabase(t, db, "max_tries", "0")
	check(`tries => 0`, "")
	setDatabase(t, db, "max_tries", "many")
	check(`tries => 4`, "the setting pgq.max_tries of database")
	check(`'{}'`, "") // no option, no ceiling read
}

// S92: a timeout longer than PostgreSQL's statement_timeout can hold is refused by
// dispatch (a producer's and an admin's), define_job and schedule; the longest it can
// is accepted.
func TestS92TimeoutsTheServerCannotSetAreRefused(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for _, call := range []string{
		`pgq.dispatch('j', timeout => 2147484)`,
		`pgq.dispatch_many('j', ARRAY['{}'::jsonb], timeout => 2147483647)`,
		`pgq.define_job('j', timeout => 2147484)`,
		`pgq.define_job('j', max_timeout => 2147484)`,
		`pgq.schedule('s', '@daily', 'j', timeout => 2147484)`,
	} {
		_, err := db.Pool.Exec(ctx, `SELECT `+call)
		require.Equal(t, "22023", pgCode(err), "%s: %v", call, err)
		require.Contains(t, err.Error(), "2147483", call)
	}
	db.Exec(t, `SELECT pgq.define_job('j', timeout => 2147483)`)
	db.Exec(t, `SELECT pgq.dispatch('j', timeout => 2147483)`)
	_, err := db.ConnAs(t, pgqtest.ProducerRole).Exec(ctx, `SELECT pgq.dispatch('j', timeout => 3000000)`)
	require.Equal(t, "22023", pgCode(err), "a producer's timeout of 3,000,000 s: %v", err)
	require.Contains(t, err.Error(), "timeout must be at most 2147483 seconds, the longest statement_timeout PostgreSQL can set, got 3000000")
}

// S92: pgq.fail_setup fails the job for good at once, whatever its tries: an attempt
// that never ran its handler, no exception counted, with the reason.
func TestS92FailSetupFailsTheJobAtOnce(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := dispatch(t, db, `'forever', tries => 0`)
	var token uuid.UUID
	require.NoError(t, db.WorkerPool.QueryRow(ctx, `SELECT lease_token FROM pgq.reserve('w1', '{default}', 1)`).Scan(&token))
	var outcome string
	var final, started bool
	require.NoError(t, db.WorkerPool.QueryRow(ctx,
		`SELECT outcome, final, started_at IS NOT NULL FROM pgq.fail_setup($1, $2, 'invalid value for parameter "statement_timeout"')`,
		id, token).Scan(&outcome, &final, &started))
	require.Equal(t, "failed", outcome)
	require.True(t, final)
	require.False(t, started)
	exc := pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, id)
	require.Equal(t, `SetupFailed: attempt 1 of forever could not be set up, so its handler never ran: invalid value for parameter "statement_timeout"`, exc)
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`))
	rows, err := db.WorkerPool.Query(ctx, `SELECT * FROM pgq.fail_setup($1, $2, 'again')`, id, token)
	require.NoError(t, err)
	again, err := pgx.CollectRows(rows, pgx.RowToMap)
	require.NoError(t, err)
	require.Empty(t, again, "a token that no longer holds its job is rejected (S15)")
}

// S93: only the role that dispatched a batch, a role it is a member of, and the
// batch's running jobs (with their uuid and lease token) may add to it. Another
// producer, a worker without a token, a token of another batch's job or of a job that
// ended, and settings a session forged are refused with 42501, writing nothing. A batch
// dispatched before the dispatcher was recorded takes members from any caller.
func TestS93OnlyItsDispatcherAndItsRunningJobsAddToABatch(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	other := db.ConnAs(t, pgqtest.OtherProducerRole)
	var batch, foreign uuid.UUID
	require.NoError(t, producer.QueryRow(ctx, `SELECT pgq.dispatch_batch('[{"job": "a"}, {"job": "a"}]')`).Scan(&batch))
	require.NoError(t, other.QueryRow(ctx, `SELECT pgq.dispatch_batch('[{"job": "b"}]')`).Scan(&foreign))
	require.Equal(t, pgqtest.ProducerRole, pgqtest.Scalar[string](t, db, `SELECT dispatched_by FROM pgq.job_batches WHERE id = $1`, batch))
	total := func() int {
		return pgqtest.Scalar[int](t, db, `SELECT total_jobs FROM pgq.batches WHERE id = $1`, batch)
	}
	type adder interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}
	add := func(q adder, job, token any) error {
		_, err := q.Exec(ctx, `SELECT pgq.add_to_batch($1, '[{"job": "a"}]', $2, $3)`, batch, job, token)
		return err
	}
	refused := func(err error, who string) {
		t.Helper()
		require.Equal(t, "42501", pgCode(err), "%s: %v", who, err)
	}

	refused(add(other, nil, nil), "another producer")
	refused(add(db.WorkerPool, nil, nil), "a worker without a running job")
	require.Equal(t, 2, total(), "nothing written")
	require.NoError(t, add(producer, nil, nil), "the producer that dispatched it")
	require.NoError(t, add(db.Pool, nil, nil), "a superuser, a member of every role")
	require.Equal(t, 4, total())

	var mine, theirs reserved
	for _, r := range reserve(t, db, "w1", clock()) {
		switch pgqtest.Scalar[uuid.UUID](t, db, `SELECT batch_id FROM pgq.jobs WHERE uuid = $1`, r.UUID) {
		case batch:
			mine = r
		case foreign:
			theirs = r
		}
	}
	require.NoError(t, add(db.WorkerPool, mine.UUID, mine.Token), "a running job of the batch")
	require.Equal(t, 5, total())
	refused(add(db.WorkerPool, theirs.UUID, theirs.Token), "a running job of another batch")
	refused(add(db.WorkerPool, mine.UUID, theirs.Token), "a job with another's token")
	refused(add(other, mine.UUID, uuid.New()), "a guessed token")
	_, err := other.Exec(ctx, `SELECT set_config('pgq.job_uuid', $1, false), set_config('pgq.job_token', $2, false)`,
		mine.UUID.String(), uuid.NewString())
	require.NoError(t, err)
	refused(add(other, nil, nil), "settings a producer forged")

	require.True(t, complete(t, db, mine))
	refused(add(db.WorkerPool, mine.UUID, mine.Token), "a job that ended")
	require.Equal(t, 5, total(), "nothing written")

	db.Exec(t, `UPDATE pgq.job_batches SET dispatched_by = NULL WHERE id = $1`, batch)
	require.NoError(t, add(other, nil, nil), "a batch from before the dispatcher was recorded")
}

// S94 (S45): a callback that cannot be queued is told on pgq_events, which any role may
// LISTEN to, by its name, batch and chain only: never the error, which may quote the
// payload (here a key made of the batch's name).
func TestS45S94CallbackFailedCarriesIdsOnly(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	nobody := db.ConnAs(t, pgqtest.NobodyRole)
	_, err := nobody.Exec(ctx, `LISTEN pgq_events`)
	require.NoError(t, err)
	db.Exec(t, `SELECT pgq.define_job('done', unique_by => '{name}')`)
	name := "secret-" + strings.Repeat("x", 990)
	batch := pgqtest.Scalar[uuid.UUID](t, db, `SELECT pgq.dispatch_batch('[{"job": "a"}]', name => $1, then_job => 'done')`, name)
	require.True(t, complete(t, db, reserveOne(t, db, clock())))
	require.Zero(t, jobsNamed(t, db, "done"), "the callback could not be queued: its key is too long")

	n := notification(t, nobody, 5*time.Second)
	require.NotNil(t, n)
	require.JSONEq(t, `{"event": "callback_failed", "job": "done", "chain_id": null, "batch_id": "`+batch.String()+`"}`, n.Payload)
}

// S98: a producer's middleware is bounded at dispatch, definition and schedule (entries,
// "by" fields, key bytes), and a job stored past the bound fails alone at its reserve:
// the plain jobs picked with it in the same call are reserved.
func TestS98MiddlewareIsBounded(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	overlaps := func(n, keyLen int) string {
		return fmt.Sprintf(`(SELECT jsonb_agg(jsonb_build_object('without_overlapping', jsonb_build_object('key', 'k' || g || repeat('z', %d))))
			FROM generate_series(1, %d) g)`, keyLen, n)
	}
	nineFields := `'[{"rate_limited": {"limit": "api", "by": ["a","b","c","d","e","f","g","h","i"]}}]'`
	db.Exec(t, `SELECT pgq.define_limit('api', 10, '1 minute')`)
	for call, want := range map[string]string{
		`pgq.dispatch('h', '{}', middleware => ` + overlaps(5000, 900) + `)`:                 "at most 8 middleware entries, got 5000",
		`pgq.dispatch('h', '{}', middleware => ` + overlaps(9, 0) + `)`:                      "at most 8 middleware entries, got 9",
		`pgq.dispatch('h', '{"a": 1}', middleware => ` + nineFields + `)`:                    `"by" must be an array of 1 to 8 payload field names`,
		`pgq.dispatch('h', '{}', middleware => ` + overlaps(5, 900) + `)`:                    "take 4520 bytes, more than the 4000 a job may carry",
		`pgq.dispatch_many('h', ARRAY['{}'::jsonb], middleware => ` + overlaps(5, 900) + `)`: "more than the 4000 a job may carry",
		`pgq.define_job('h', middleware => ` + overlaps(9, 0) + `)`:                          "at most 8 middleware entries",
		`pgq.schedule('s', '@daily', 'h', middleware => ` + overlaps(9, 0) + `)`:             "at most 8 middleware entries",
	} {
		_, err := producer.Exec(ctx, `SELECT `+call)
		if strings.HasPrefix(call, "pgq.define_job") || strings.HasPrefix(call, "pgq.schedule") {
			_, err = db.Pool.Exec(ctx, `SELECT `+call) // an admin's call: the bound holds for admins too
		}
		require.Equal(t, "22023", pgCode(err), "%s: %v", call, err)
		require.Contains(t, err.Error(), want, call)
	}
	require.Zero(t, count(t, db, "pgq.jobs"))

	// At the bounds, accepted.
	_, err := producer.Exec(ctx, `SELECT pgq.dispatch('h', '{}', middleware => `+overlaps(8, 400)+`)`)
	require.NoError(t, err)
	_, err = producer.Exec(ctx, `SELECT pgq.dispatch('h', '{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}',
		middleware => '[{"rate_limited": {"limit": "api", "by": ["a","b","c","d","e","f","g","h"]}}]')`)
	require.NoError(t, err)
	db.Exec(t, `DELETE FROM pgq.jobs`)

	// A job stored past the bound, between plain ones, fails alone and for good.
	first := dispatch(t, db, `'plain'`)
	big := dispatch(t, db, `'h', middleware => '[{"without_overlapping": {"key": "a"}}]'`)
	last := dispatch(t, db, `'plain'`)
	db.Exec(t, `UPDATE pgq.jobs SET middleware = `+overlaps(5000, 900)+`, middleware_keys = NULL WHERE uuid = $1`, big)
	rows, err := db.WorkerPool.Query(ctx, `SELECT uuid, coalesce(pickup::text, '') FROM pgq.reserve('w1', '{default}', 10)`)
	require.NoError(t, err)
	got := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var pickup string
		require.NoError(t, rows.Scan(&id, &pickup))
		got[id] = pickup
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[uuid.UUID]string{first: "", last: "", big: "failed"}, got)
	require.Contains(t, pgqtest.Scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1`, big),
		"middleware could not be evaluated: 5000 entries, more than the 8 a job may carry")
	require.Zero(t, count(t, db, "pgq.overlap_locks"), "no lease was taken for it")
}
