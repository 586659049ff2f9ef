-- Who may do what (rules S43-S46). pgq.Migrate applies this file after the
-- functions on every migrate, in the same transaction, with the role names of its
-- options (default pgq_*) put in as quoted identifiers and as literals. Statements
-- marked "as the migrator" run as the role that migrates; the rest as the owner.
--
--   owner           NOLOGIN; owns the schema and every object in it. Only its
--                   SECURITY DEFINER functions write pgq's tables.
--   producer        dispatches jobs (pgq.dispatch, pgq.dispatch_many, and in bulk
--                   pgq.stage_dispatch + COPY + pgq.dispatch_staged), nothing else.
--   worker          runs the worker protocol; its login role runs SQL handlers.
--   reader          reads the views, the history and the configuration; payloads show
--                   as NULL unless it is also a payload reader.
--   payload_reader  may read payloads (a marker role: no privileges of its own).
--   admin           defines queues, job classes and limits, and operates jobs (retry,
--                   forget, flush, run now, cancel, pause); a reader too.

-- section: roles (as the migrator)
-- Each role is created NOLOGIN when missing (this needs CREATEROLE; create them by hand
-- otherwise), and the migrator becomes a member of the owner, so that it can create
-- pgq's objects as the owner.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY[{{lit .Owner}}, {{lit .Producer}}, {{lit .Worker}}, {{lit .Reader}}, {{lit .PayloadReader}}, {{lit .Admin}}] LOOP
        IF to_regrole(quote_ident(r)) IS NULL THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
    IF NOT pg_has_role(current_user, {{lit .Owner}}, 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', {{lit .Owner}}, current_user);
    END IF;
    IF NOT pg_has_role({{lit .Admin}}, {{lit .Reader}}, 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', {{lit .Reader}}, {{lit .Admin}});
    END IF;
    -- pgq's SECURITY DEFINER functions run as the owner; those that return a view's
    -- rows (pgq.schedule returns its schedule) show the payload their caller gave.
    IF NOT pg_has_role({{lit .Owner}}, {{lit .PayloadReader}}, 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', {{lit .PayloadReader}}, {{lit .Owner}});
    END IF;
END
$$;

-- section: ownership (as the migrator)
-- Everything in schema pgq belongs to the owner: an installation of an earlier release,
-- or a table a migration just created, belongs to whoever migrated.
DO $$
DECLARE
    v_owner oid := (SELECT oid FROM pg_roles WHERE rolname = {{lit .Owner}});
    o record;
BEGIN
    IF (SELECT nspowner FROM pg_namespace WHERE nspname = 'pgq') <> v_owner THEN
        EXECUTE format('ALTER SCHEMA pgq OWNER TO %I', {{lit .Owner}});
    END IF;
    -- Tables carry their identity sequences and indexes along.
    FOR o IN
        SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END AS kind, c.oid::regclass::text AS name
        FROM pg_class c
        WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'p', 'v') AND c.relowner <> v_owner
        UNION ALL
        SELECT 'FUNCTION', p.oid::regprocedure::text FROM pg_proc p
        WHERE p.pronamespace = 'pgq'::regnamespace AND p.proowner <> v_owner
        UNION ALL
        SELECT 'TYPE', t.oid::regtype::text FROM pg_type t
        WHERE t.typnamespace = 'pgq'::regnamespace AND t.typowner <> v_owner
          AND t.typtype IN ('c', 'e') AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO %I', o.kind, o.name, {{lit .Owner}});
    END LOOP;
END
$$;

INSERT INTO pgq.roles (kind, name) VALUES
    ('owner', {{lit .Owner}}), ('producer', {{lit .Producer}}), ('worker', {{lit .Worker}}),
    ('reader', {{lit .Reader}}), ('payload_reader', {{lit .PayloadReader}}), ('admin', {{lit .Admin}})
ON CONFLICT (kind) DO UPDATE SET name = EXCLUDED.name;

-- section: grants (as the owner)
-- PUBLIC has nothing: not the schema, not a table, not a function (functions are
-- executable by PUBLIC unless revoked, and new ones would be too).
REVOKE ALL ON SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgq FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;  -- for the functions the owner creates
GRANT USAGE ON SCHEMA pgq TO {{ident .Producer}}, {{ident .Worker}}, {{ident .Reader}}, {{ident .Admin}};

GRANT EXECUTE ON FUNCTION pgq.dispatch, pgq.dispatch_many, pgq.stage_dispatch, pgq.dispatch_staged,
    pgq.dispatch_chain, pgq.dispatch_batch, pgq.add_to_batch TO {{ident .Producer}};
-- What would keep a dispatched job from running (no worker for its queue or name, S87):
-- pgq-worker dispatch warns with it.
GRANT EXECUTE ON FUNCTION pgq.dispatch_warnings TO {{ident .Producer}};

GRANT EXECUTE ON FUNCTION pgq.reserve, pgq.unreserve, pgq.heartbeat, pgq.complete, pgq.fail, pgq.fail_many,
    pgq.release, pgq.give_back, pgq.give_back_group, pgq.fail_setup, pgq.cancel_requests, pgq.cancelled, pgq.run_sql_job, pgq._sql_job, pgq.nap,
    pgq.wake, pgq.rotate, pgq.prune_all, pgq.check, pgq.due_schedules, pgq.plan_schedule, pgq.fire_schedule, pgq.job_batch,
    pgq.worker_seen, pgq.worker_stopped, pgq._handler_path_hint, pgq._proc_search_path
    TO {{ident .Worker}};
-- A running job of a batch may add more to it, showing its lease token (pgq.add_to_batch, S73, S93).
GRANT EXECUTE ON FUNCTION pgq.add_to_batch TO {{ident .Worker}};
-- PostgreSQL 17 lets a non-owner vacuum a table it holds MAINTAIN on; before that only
-- the owner may, and workers that are not members of it leave pgq.jobs to autovacuum
-- (S47; VACUUM cannot run inside a function, so no SECURITY DEFINER function can do it).
-- A vacuum of pgq.jobs is one of each of its slots (S80).
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 170000 THEN
        EXECUTE format('GRANT MAINTAIN ON pgq.jobs, pgq.jobs_0, pgq.jobs_1, pgq.jobs_2, pgq.jobs_3, pgq.loads, pgq.loads_0, pgq.loads_1, pgq.loads_2, pgq.loads_3, pgq.fair_turns TO %I', {{lit .Worker}});
    END IF;
END
$$;
-- The worker's metrics read the queues' figures, the batches', the stalled chains
-- and batches and the concurrency limits' (whose view calls pgq._default_retry_after as its reader); its vacuum
-- check reads the table's statistics, which need no grant.
GRANT SELECT ON pgq.queue_stats, pgq.batches, pgq.stalled, pgq.limits TO {{ident .Worker}};
GRANT EXECUTE ON FUNCTION pgq._default_retry_after TO {{ident .Worker}};

GRANT SELECT ON pgq.ready, pgq.scheduled, pgq.retrying, pgq.running, pgq.failed, pgq.locks, pgq.limits,
    pgq.queue_stats, pgq.attempts, pgq.actions, pgq.queues, pgq.job_classes, pgq.rate_limits, pgq.concurrency_limits, pgq.roles,
    pgq.schedules, pgq.job_settings, pgq.failed_job_settings, pgq.queue_overview, pgq.batches, pgq.chains,
    pgq.job_storage, pgq.job_ends, pgq.live_jobs, pgq.workers, pgq.live_workers, pgq.handler_search_paths,
    pgq.goose_version, pgq.callbacks, pgq.batch_jobs, pgq.stalled, pgq.fair_keys, pgq.fair_weights TO {{ident .Reader}};
GRANT EXECUTE ON FUNCTION pgq.check, pgq.dispatch_warnings, pgq._worker_ttl, pgq._sees_payloads, pgq._default_retry_after,
    pgq._lock_space, pgq.live_job, pgq._load_chunk_of, pgq._load_payloads TO {{ident .Reader}};

GRANT EXECUTE ON FUNCTION pgq.define_queue, pgq.set_fair_weight, pgq._default_retry_after, pgq.define_job, pgq._handler_proc, pgq._define_job,
    pgq._proc_search_path, pgq._describe_class, pgq.define_limit, pgq.drop_limit, pgq.define_concurrency,
    pgq.drop_concurrency, pgq.run_now, pgq.retry_failed,
    pgq.forget_failed, pgq.flush_failed, pgq.prune, pgq.cancel, pgq.pause_queue, pgq.resume_queue, pgq.cancel_batch,
    pgq.retry_batch_failed, pgq.schedule, pgq.unschedule, pgq.pause_schedule, pgq.resume_schedule, pgq.run_schedule TO {{ident .Admin}};
