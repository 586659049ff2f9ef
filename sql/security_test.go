package sql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// invokers are the public functions that run with their caller's privileges on purpose:
// run_sql_job runs a handler as the worker's login (S44), define_job resolves a handler
// with the admin's privileges (S44), live_job reads pgq.live_jobs as its caller, so that
// a payload shows only to a payload reader (S45). Everything else a role may call is
// SECURITY DEFINER.
var invokers = map[string]bool{"run_sql_job": true, "define_job": true, "live_job": true}

// S46: every function in schema pgq pins its search_path, every public one is SECURITY
// DEFINER, and PUBLIC has nothing on the schema, its tables or its functions.
func TestS46FunctionsPinSearchPathAndPublicHasNothing(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	rows, err := db.Pool.Query(ctx, `
		SELECT p.oid::regprocedure::text, p.proname, p.prosecdef, coalesce(p.proconfig, '{}'), p.proacl IS NULL
		FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace ORDER BY 1`)
	require.NoError(t, err)
	type fn struct {
		Sig, Name  string
		Definer    bool
		Config     []string
		DefaultACL bool
	}
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	require.NoError(t, err)
	require.Greater(t, len(fns), 50)
	for _, f := range fns {
		require.Contains(t, f.Config, "search_path=pg_catalog, pg_temp", "%s must pin search_path", f.Sig)
		require.False(t, f.DefaultACL, "%s has the default ACL, which lets PUBLIC execute it", f.Sig)
		if !strings.HasPrefix(f.Name, "_") && !invokers[f.Name] {
			require.True(t, f.Definer, "%s is public API: it must be SECURITY DEFINER", f.Sig)
		}
	}
	require.Zero(t, pgqtest.Scalar[int](t, db, `
		SELECT (SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a WHERE p.pronamespace = 'pgq'::regnamespace AND a.grantee = 0)
		     + (SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE c.relnamespace = 'pgq'::regnamespace AND a.grantee = 0)
		     + (SELECT count(*) FROM pg_namespace n, aclexplode(n.nspacl) a WHERE n.nspname = 'pgq' AND a.grantee = 0)`),
		"PUBLIC holds a privilege in schema pgq")
	require.Zero(t, pgqtest.Scalar[int](t, db, `
		SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'pgq'::regnamespace
		AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = 'pgq_owner')`), "everything belongs to pgq_owner")
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT rolcanlogin FROM pg_roles WHERE rolname = 'pgq_owner'`))
}

// S46: each role does its part and nothing else; S45: payloads only for payload readers.
func TestS45S46RolesDoOnlyTheirPart(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.noop(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	db.Exec(t, `SELECT pgq.define_job('j', handler => 'public.noop', tries => 1)`)
	failed := dispatch(t, db, `'j', '{"email": "bob@example.com"}'`)
	require.True(t, fail(t, db, reserveOne(t, db, clock()), "boom", false, clock()).Final)
	secret := dispatch(t, db, `'j', '{"email": "ann@example.com"}'`)
	db.Exec(t, `SELECT pgq.schedule('nightly', '@daily', 'j', '{"email": "cy@example.com"}')`)

	const denied, allowed = "denied", "allowed"
	cases := []struct {
		login, sql, want string
	}{
		{pgqtest.NobodyRole, `SELECT pgq.dispatch('j')`, denied},
		{pgqtest.NobodyRole, `SELECT count(*) FROM pgq.ready`, denied},

		{pgqtest.ProducerRole, `SELECT pgq.dispatch('j', '{"n": 1}')`, allowed},
		{pgqtest.ProducerRole, `SELECT pgq.dispatch_many('j', ARRAY['{"n": 2}'::jsonb])`, allowed},
		{pgqtest.ProducerRole, `SELECT pgq.dispatch_chain('[{"job": "j"}, {"job": "j"}]')`, allowed},
		{pgqtest.ProducerRole, `SELECT pgq.dispatch_batch('[{"job": "j"}]')`, allowed},
		{pgqtest.ProducerRole, `SELECT count(*) FROM pgq.batches`, denied},
		{pgqtest.ProducerRole, `SELECT payload FROM pgq.jobs`, denied},
		{pgqtest.ProducerRole, `INSERT INTO pgq.jobs (job, handler) VALUES ('x', 'public.noop(jsonb)')`, denied},
		{pgqtest.ProducerRole, `SELECT pgq.define_job('x', handler => 'public.noop')`, denied},
		{pgqtest.ProducerRole, `SELECT * FROM pgq.reserve('p', '{default}', 1, 1)`, denied},
		{pgqtest.ProducerRole, `SELECT count(*) FROM pgq.ready`, denied},

		{pgqtest.WorkerRole, `SELECT * FROM pgq.reserve('w2', '{nothing}', 1, 1)`, allowed},
		{pgqtest.WorkerRole, `SELECT * FROM pgq.queue_stats`, allowed},
		{pgqtest.WorkerRole, `SELECT payload FROM pgq.jobs`, denied},
		{pgqtest.WorkerRole, `SELECT payload FROM pgq.ready`, denied},
		{pgqtest.WorkerRole, `UPDATE pgq.jobs SET attempts = 0`, denied},
		{pgqtest.WorkerRole, `SELECT pgq.dispatch('j')`, denied},
		{pgqtest.WorkerRole, `SELECT pgq.define_job('x', handler => 'public.noop')`, denied},
		{pgqtest.WorkerRole, `SELECT pgq.retry_failed('` + failed.String() + `')`, denied},

		{pgqtest.ReaderRole, `SELECT count(*) FROM pgq.ready`, allowed},
		{pgqtest.ReaderRole, `SELECT count(*) FROM pgq.attempts`, allowed},
		{pgqtest.ReaderRole, `SELECT * FROM pgq.check()`, allowed},
		{pgqtest.ReaderRole, `SELECT count(*) FROM pgq.batches`, allowed},
		{pgqtest.ReaderRole, `SELECT count(*) FROM pgq.chains`, allowed},
		{pgqtest.ReaderRole, `SELECT pgq.cancel_batch(gen_random_uuid())`, denied},
		{pgqtest.ReaderRole, `SELECT payload FROM pgq.jobs`, denied},
		{pgqtest.ReaderRole, `SELECT pgq.dispatch('j')`, denied},
		{pgqtest.ReaderRole, `SELECT pgq.pause_queue('default')`, denied},
		{pgqtest.ReaderRole, `SELECT pgq.forget_failed('` + failed.String() + `')`, denied},

		{pgqtest.AdminRole, `SELECT pgq.define_queue('mail')`, allowed},
		{pgqtest.AdminRole, `SELECT pgq.define_job('x', handler => 'public.noop')`, allowed},
		{pgqtest.AdminRole, `SELECT pgq.pause_queue('mail')`, allowed},
		{pgqtest.AdminRole, `SELECT pgq.drop_limit('none')`, allowed},
		{pgqtest.WorkerRole, `SELECT pgq.drop_limit('none')`, denied},
		{pgqtest.AdminRole, `SELECT pgq.schedule('hourly', '@hourly', 'j')`, allowed},
		{pgqtest.ReaderRole, `SELECT pgq.run_schedule('nightly')`, denied},
		{pgqtest.WorkerRole, `SELECT pgq.schedule('w', '@hourly', 'j')`, denied},
		{pgqtest.AdminRole, `SELECT count(*) FROM pgq.failed`, allowed},
		{pgqtest.AdminRole, `SELECT pgq.cancel_batch(gen_random_uuid())`, allowed},
		{pgqtest.AdminRole, `DELETE FROM pgq.failed_jobs`, denied},
		{pgqtest.AdminRole, `SELECT * FROM pgq.reserve('a', '{default}', 1, 1)`, denied},
	}
	for _, c := range cases {
		conn := db.ConnAs(t, c.login)
		_, err := conn.Exec(ctx, c.sql)
		if c.want == allowed {
			require.NoError(t, err, "%s: %s", c.login, c.sql)
		} else {
			require.Equal(t, "42501", pgCode(err), "%s: %s: %v", c.login, c.sql, err)
		}
	}

	// The COPY path works for a producer: pgq's staging table takes its rows (S68).
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	tx, err := producer.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pgq.stage_dispatch()`)
	require.NoError(t, err)
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "pgq_staged_payloads"}, []string{"payload"},
		pgx.CopyFromRows([][]any{{`{"n": 1}`}, {`{"n": 2}`}}))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	var staged []uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT pgq.dispatch_staged('j', queue => 'staged')`).Scan(&staged))
	require.Len(t, staged, 2)
	require.NoError(t, tx.Commit(ctx))

	// A worker cannot complete a job another worker holds: it would need the lease token,
	// which only the holder's reserve returned and no view of the worker role shows.
	var held uuid.UUID
	require.NoError(t, db.ConnAs(t, pgqtest.WorkerRole).QueryRow(ctx,
		`SELECT uuid FROM pgq.reserve('holder', '{default}', 1, 1) WHERE uuid = $1`, secret).Scan(&held))
	other := db.ConnAs(t, pgqtest.WorkerRole)
	var completed int
	require.NoError(t, other.QueryRow(ctx, `SELECT count(*) FROM pgq.complete(ARRAY[$1::uuid], ARRAY[gen_random_uuid()])`, held).Scan(&completed))
	require.Zero(t, completed)
	_, err = other.Exec(ctx, `SELECT * FROM pgq.running`)
	require.Equal(t, "42501", pgCode(err))
	require.Equal(t, "holder", pgqtest.Scalar[string](t, db, `SELECT reserved_by FROM pgq.jobs WHERE uuid = $1`, held))

	// S45: the views show payloads to payload readers only; to pgq_reader and pgq_admin
	// they are NULL.
	payloadAs := func(login, sql string, id uuid.UUID) *string {
		var p *string
		require.NoError(t, db.ConnAs(t, login).QueryRow(ctx, sql, id).Scan(&p), login)
		return p
	}
	for _, login := range []string{pgqtest.ReaderRole, pgqtest.AdminRole} {
		require.Nil(t, payloadAs(login, `SELECT payload::text FROM pgq.running WHERE uuid = $1`, secret), login)
		require.Nil(t, payloadAs(login, `SELECT payload::text FROM pgq.failed WHERE uuid = $1`, failed), login)
		require.Nil(t, payloadAs(login, `SELECT payload::text FROM pgq.schedules WHERE name = 'nightly' AND $1::uuid IS NOT NULL`, secret), login)
	}
	require.Contains(t, *payloadAs(pgqtest.PayloadReaderRole, `SELECT payload::text FROM pgq.schedules WHERE name = 'nightly' AND $1::uuid IS NOT NULL`, secret), "cy@example.com")
	require.Contains(t, *payloadAs(pgqtest.PayloadReaderRole, `SELECT payload::text FROM pgq.running WHERE uuid = $1`, secret), "ann@example.com")
	require.Contains(t, *payloadAs(pgqtest.PayloadReaderRole, `SELECT payload::text FROM pgq.failed WHERE uuid = $1`, failed), "bob@example.com")
}

// S45: any role of the database may LISTEN, so pgq's events name jobs but carry no
// payload field, key or exception.
func TestS45EventsCarryNoPayloadData(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	nobody := db.ConnAs(t, pgqtest.NobodyRole)
	_, err := nobody.Exec(ctx, `LISTEN pgq_events`)
	require.NoError(t, err)
	db.Exec(t, `SELECT pgq.define_job('mail', tries => 1)`)
	for i := 0; i < 2; i++ {
		dispatch(t, db, `'mail', '{"to": "ann@example.com"}', debounce_key => 'mail:ann@example.com', debounce_for => '1 second'`)
	}
	dispatch(t, db, `'mail', '{"to": "bob@example.com"}'`)
	for _, r := range reserve(t, db, "w1", clock().Add(2*time.Second)) {
		fail(t, db, r, "SMTP refused bob@example.com", false, clock().Add(2*time.Second))
	}
	seen := map[string]bool{}
	for {
		n := notification(t, nobody, time.Second)
		if n == nil {
			break
		}
		require.NotContains(t, n.Payload, "example.com", "event %s", n.Payload)
		for _, ev := range []string{"job_debounced", "job_failed"} {
			if strings.Contains(n.Payload, `"`+ev+`"`) {
				seen[ev] = true
			}
		}
	}
	require.Equal(t, map[string]bool{"job_debounced": true, "job_failed": true}, seen)
}

// S46: a caller's search_path cannot put its functions in pgq's way: with an evil
// schema first in the path, dispatch, reserve and complete run pg_catalog's functions.
func TestS46SearchPathCannotBeHijacked(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
		CREATE SCHEMA evil;
		GRANT USAGE ON SCHEMA evil TO PUBLIC;
		CREATE FUNCTION evil.make_interval(secs integer) RETURNS interval LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'hijacked make_interval'; END $$;
		CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'hijacked now'; END $$;
		CREATE FUNCTION evil.jsonb_typeof(t text) RETURNS text LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'hijacked jsonb_typeof'; END $$;
		CREATE FUNCTION evil.text_eq(a text, b varchar) RETURNS boolean LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'hijacked ='; END $$;
		CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = varchar, FUNCTION = evil.text_eq);
		GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA evil TO PUBLIC;
		SELECT pgq.define_limit('l', 100, '1 minute');
		SELECT pgq.define_job('j', tries => 2, unique_for => '1 hour', middleware => '[{"rate_limited": {"limit": "l"}}]');`)
	producer := db.ConnAs(t, pgqtest.ProducerRole)
	worker := db.ConnAs(t, pgqtest.WorkerRole)
	for _, c := range []*pgx.Conn{producer, worker} {
		_, err := c.Exec(ctx, `SET search_path = evil, public, pg_catalog`)
		require.NoError(t, err)
	}
	_, err := producer.Exec(ctx, `SELECT pgq.dispatch('j', '{"n": 1}', unique_key => 'k', delay => '0 seconds', priority => 5)`)
	require.NoError(t, err)
	var id, token uuid.UUID
	require.NoError(t, worker.QueryRow(ctx, `SELECT uuid, lease_token FROM pgq.reserve('w', '{default}', 10, 1)`).Scan(&id, &token))
	_, err = worker.Exec(ctx, `SELECT pgq.heartbeat(ARRAY[$1::uuid], ARRAY[$2::uuid])`, id, token)
	require.NoError(t, err)
	_, err = worker.Exec(ctx, `SELECT * FROM pgq.fail($1, $2, 'once')`, id, token)
	require.NoError(t, err)
	require.Equal(t, []string{"failed"}, outcomes(t, db, id))
}

// S44: a handler is named by an admin, must exist, take jsonb, carry its schema and be
// executable by that admin; it runs as the worker's login role, never as pgq's owner;
// S48: it reads its job from transaction-local settings. A handler dropped after
// dispatch fails the job with the reason, and pgq.retry_failed takes the class's new one.
func TestS44S48HandlersAreNamedByAnAdminAndRunAsTheWorker(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
		CREATE SCHEMA app;
		CREATE TABLE app.runs (who text, session_who text, job uuid, attempt int, worker text);
		CREATE FUNCTION app.whoami(p jsonb) RETURNS void LANGUAGE sql AS $$
			INSERT INTO app.runs VALUES (current_user, session_user, current_setting('pgq.job_uuid')::uuid,
			                             current_setting('pgq.job_attempt')::int, current_setting('pgq.worker'))
		$$;
		CREATE FUNCTION app.takes_int(p int) RETURNS void LANGUAGE sql AS $$ SELECT $$;
		CREATE FUNCTION app.private(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
		REVOKE EXECUTE ON FUNCTION app.private(jsonb) FROM PUBLIC;
		GRANT USAGE ON SCHEMA app TO pgq_admin;`)
	admin := db.ConnAs(t, pgqtest.AdminRole)
	for handler, code := range map[string]string{
		"app.nosuch":    "42883",
		"app.takes_int": "42883",
		"whoami":        "22023",
		"app.private":   "42501",
	} {
		_, err := admin.Exec(ctx, `SELECT pgq.define_job('x', handler => $1)`, handler)
		require.Equal(t, code, pgCode(err), "handler %s: %v", handler, err)
	}
	_, err := admin.Exec(ctx, `SELECT pgq.define_job('who', handler => 'app.whoami', tries => 1)`)
	require.NoError(t, err)
	require.Equal(t, "app.whoami(jsonb)", pgqtest.Scalar[string](t, db, `SELECT handler::text FROM pgq.job_classes WHERE name = 'who'`))

	id := dispatch(t, db, `'who'`)
	worker := db.ConnAs(t, pgqtest.WorkerRole)
	run := func() error {
		var token uuid.UUID
		require.NoError(t, worker.QueryRow(ctx, `SELECT lease_token FROM pgq.reserve('w7', '{default}', 1, 1)`).Scan(&token))
		_, err := worker.Exec(ctx, `SELECT pgq.run_sql_job($1, $2)`, id, token)
		if err != nil {
			_, ferr := worker.Exec(ctx, `SELECT * FROM pgq.fail($1, $2, $3)`, id, token, err.Error())
			require.NoError(t, ferr)
		}
		return err
	}
	require.NoError(t, run())
	var who, sessionWho, workerName string
	var job uuid.UUID
	var attempt int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT * FROM app.runs`).Scan(&who, &sessionWho, &job, &attempt, &workerName))
	require.Equal(t, []any{pgqtest.WorkerRole, pgqtest.WorkerRole, id, 1, "w7"}, []any{who, sessionWho, job, attempt, workerName})
	require.Equal(t, "", pgqtest.Scalar[string](t, db, `SELECT coalesce(current_setting('pgq.job_uuid', true), '')`),
		"the settings are the handler transaction's only")

	// dropped after dispatch: the job fails with the reason; defined again, a retry runs
	id = dispatch(t, db, `'who'`)
	db.Exec(t, `DROP FUNCTION app.whoami(jsonb)`)
	err = run()
	require.Equal(t, "42883", pgCode(err))
	require.ErrorContains(t, err, "was dropped since")
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs WHERE uuid = $1`, id))
	db.Exec(t, `CREATE FUNCTION app.whoami(p jsonb) RETURNS void LANGUAGE sql AS $$ INSERT INTO app.runs (who) VALUES ('again') $$`)
	_, err = admin.Exec(ctx, `SELECT pgq.define_job('who', handler => 'app.whoami', tries => 1)`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `SELECT pgq.retry_failed($1)`, id)
	require.NoError(t, err)
	require.NoError(t, run())
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM app.runs WHERE who = 'again'`))
}

// S43: a dispatch may not choose timeout 0, a priority outside -100..100 or a payload
// over 8 MiB.
func TestS43WhatADispatchMayChoose(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('j')`)
	for _, opt := range []string{`timeout => 0`, `priority => 101`, `priority => -101`} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch('j', `+opt+`)`)
		require.Equal(t, "22023", pgCode(err), "dispatch %s: %v", opt, err)
		_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch_many('j', ARRAY['{}'::jsonb], `+opt+`)`)
		require.Equal(t, "22023", pgCode(err), "dispatch_many %s: %v", opt, err)
	}
	const huge = `jsonb_build_object('blob', repeat('x', 8 * 1024 * 1024))`
	_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch('j', `+huge+`)`)
	require.Equal(t, "22023", pgCode(err), "dispatch of a payload over 8 MiB: %v", err)
	_, err = db.Pool.Exec(ctx, `SELECT pgq.dispatch_many('j', ARRAY['{}'::jsonb, `+huge+`])`)
	require.Equal(t, "22023", pgCode(err), "dispatch_many of a payload over 8 MiB: %v", err)
	for _, args := range []string{`'j', timeout => 1`, `'j', priority => 100`, `'j', priority => -100`} {
		_, err := db.Pool.Exec(ctx, `SELECT pgq.dispatch(`+args+`)`)
		require.NoError(t, err, args)
	}
}
