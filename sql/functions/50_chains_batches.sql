-- Chains and batches (S70-S76): jobs that run one after another, and groups of jobs with
-- callbacks. Both are rows written in the dispatching transaction and advanced by the
-- transaction that ends each job: the core records the end of every job that carries a
-- batch or a chain in pgq.job_ends (pgq._record_ends), and the trigger on that table
-- (pgq._job_ends_advance) moves its chain and counts it in its batch (pgq._jobs_ended).
--
-- Locks, always taken in this order, so that no two of these paths wait for each other
-- in a cycle: a job's row (the caller holds it), then a batch's pgq.batch_counts shards
-- in (batch_id, shard) order, then the batch's pgq.job_batches row. Job rows a path did
-- not start with are only ever taken with SKIP LOCKED.

-- pgq._batch_shard: the counter shard of a batch member (a job's uuid, or a chain's id).
CREATE OR REPLACE FUNCTION pgq._batch_shard(p_member uuid) RETURNS smallint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (hashtext(p_member::text) & 15)::smallint;
END;
$$;

COMMENT ON FUNCTION pgq._batch_shard(uuid) IS 'The pgq.batch_counts shard (0-15) a batch member counts in: its id hashed.';

-- pgq._json_interval: an interval given in JSON as a number of seconds or as text
-- ('10 minutes'). NULL for JSON null or absent.
CREATE OR REPLACE FUNCTION pgq._json_interval(p_value jsonb) RETURNS interval
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN CASE jsonb_typeof(p_value)
               WHEN 'number' THEN make_interval(secs => (p_value #>> '{}')::double precision)
               WHEN 'string' THEN (p_value #>> '{}')::interval
           END;
END;
$$;

COMMENT ON FUNCTION pgq._json_interval(jsonb) IS 'An interval from JSON: a number of seconds, or text such as ''10 minutes''.';

-- pgq._check_entries: every entry of a batch's jobs or a chain's steps is an object with
-- "job" and only the keys pgq.dispatch takes (plus "payload"); in a batch, an entry may
-- instead be {"chain": [steps], "on_failure": job} (p_chains). Raises 22023 naming the
-- entry, before anything is written.
CREATE OR REPLACE FUNCTION pgq._check_entries(p_what text, p_entries jsonb, p_chains boolean) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_entry jsonb;
    v_bad   text;
    v_n     int := 0;
BEGIN
    IF jsonb_typeof(p_entries) IS DISTINCT FROM 'array' OR jsonb_array_length(p_entries) = 0 THEN
        RAISE EXCEPTION 'pgq: % must be a non-empty JSON array, got %', p_what, left(coalesce(p_entries::text, 'NULL'), 200)
            USING ERRCODE = '22023';
    END IF;
    FOR v_entry IN SELECT e FROM jsonb_array_elements(p_entries) e LOOP
        v_n := v_n + 1;
        IF p_chains AND jsonb_typeof(v_entry) = 'object' AND v_entry ? 'chain' THEN
            SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_entry) k WHERE k NOT IN ('chain', 'on_failure', 'queue');
            IF v_bad IS NOT NULL THEN
                RAISE EXCEPTION 'pgq: % entry % is a chain and cannot have %', p_what, v_n, v_bad USING ERRCODE = '22023';
            END IF;
            PERFORM pgq._check_entries(format('%s entry %s: chain', p_what, v_n), v_entry -> 'chain', false);
            CONTINUE;
        END IF;
        IF jsonb_typeof(v_entry) IS DISTINCT FROM 'object' OR jsonb_typeof(v_entry -> 'job') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'pgq: % entry % needs a "job" name, got %', p_what, v_n, left(v_entry::text, 200)
                USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_entry) k
        WHERE k NOT IN ('job', 'payload', 'queue', 'delay', 'tries', 'backoff', 'retry_until', 'max_exceptions',
                        'timeout', 'fail_on_timeout', 'priority', 'unique_key', 'unique_for', 'unique_until',
                        'debounce_key', 'debounce_for', 'debounce_max_wait', 'middleware', 'retry_for');
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: % entry % (%) has unknown keys: %', p_what, v_n, v_entry ->> 'job', v_bad
                USING ERRCODE = '22023';
        END IF;
        PERFORM pgq._check_name('job', v_entry ->> 'job');
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._check_entries(text, jsonb, boolean) IS 'Raises 22023 unless every entry is {"job", "payload", dispatch options} (or, in a batch, {"chain": [...]}).';

-- pgq._dispatch_entries: dispatches entries (objects checked by pgq._check_entries, no
-- chains) that share every option but the payload, in one pgq._dispatch call per set of
-- options; p_queue applies where an entry names no queue; p_ceilings as in pgq._dispatch
-- (S90); p_traceparent, p_tracestate the trace context the jobs carry (S107), the
-- transaction's when NULL. Returns one uuid (NULL: a unique duplicate dropped) per
-- entry, in entry order.
CREATE OR REPLACE FUNCTION pgq._dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step int,
                                                 p_ceilings boolean DEFAULT true,
                                                 p_traceparent text DEFAULT NULL, p_tracestate text DEFAULT NULL)
RETURNS uuid[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_group record;
    v_uuids uuid[];
    v_out   uuid[] := array_fill(NULL::uuid, ARRAY[jsonb_array_length(p_entries)]);
    i       int;
BEGIN
    FOR v_group IN
        SELECT e.value - 'payload' AS o,
               array_agg(coalesce(e.value -> 'payload', '{}') ORDER BY e.n) AS payloads,
               array_agg(e.n ORDER BY e.n) AS ns
        FROM jsonb_array_elements(p_entries) WITH ORDINALITY AS e(value, n)
        GROUP BY e.value - 'payload'
        ORDER BY min(e.n)
    LOOP
        v_uuids := ARRAY(SELECT pgq._dispatch(
            job => v_group.o ->> 'job',
            payloads => v_group.payloads,
            queue => coalesce(v_group.o ->> 'queue', p_queue),
            delay => pgq._json_interval(v_group.o -> 'delay'),
            tries => (v_group.o ->> 'tries')::int,
            backoff => CASE jsonb_typeof(v_group.o -> 'backoff')
                           WHEN 'array' THEN ARRAY(SELECT b::int FROM jsonb_array_elements_text(v_group.o -> 'backoff') b)
                           WHEN 'number' THEN ARRAY[(v_group.o ->> 'backoff')::int] END,
            retry_until => (v_group.o ->> 'retry_until')::timestamptz,
            max_exceptions => (v_group.o ->> 'max_exceptions')::int,
            timeout => (v_group.o ->> 'timeout')::int,
            fail_on_timeout => (v_group.o ->> 'fail_on_timeout')::boolean,
            priority => coalesce((v_group.o ->> 'priority')::int, 0),
            unique_key => v_group.o ->> 'unique_key',
            unique_for => pgq._json_interval(v_group.o -> 'unique_for'),
            unique_until => v_group.o ->> 'unique_until',
            debounce_key => v_group.o ->> 'debounce_key',
            debounce_for => pgq._json_interval(v_group.o -> 'debounce_for'),
            debounce_max_wait => pgq._json_interval(v_group.o -> 'debounce_max_wait'),
            middleware => nullif(v_group.o -> 'middleware', 'null'),
            retry_for => pgq._json_interval(v_group.o -> 'retry_for'),
            p_batch_id => p_batch, p_chain_id => p_chain, p_chain_step => p_step, p_ceilings => p_ceilings,
            traceparent => p_traceparent, tracestate => p_tracestate));
        FOR i IN 1 .. cardinality(v_uuids) LOOP
            v_out[v_group.ns[i]] := v_uuids[i];
        END LOOP;
    END LOOP;
    RETURN v_out;
END;
$$;

COMMENT ON FUNCTION pgq._dispatch_entries(jsonb, text, uuid, uuid, int, boolean, text, text) IS 'Dispatches {"job", "payload", options} entries, one pgq._dispatch per set of options; uuids in entry order (NULL: dropped duplicate).';

-- pgq._dispatch_callback: queues a callback job (a chain's on_failure, a batch's then,
-- catch or finally) from inside the transaction that ends a job, and records it in
-- pgq.callbacks (S97). The job carries chain_id = the id of its batch or chain and
-- chain_step = 0, so that the core records its end in pgq.job_ends, as it does for the
-- jobs of chains and batches, and the trigger there copies it to its pgq.callbacks row.
-- A callback that cannot be queued (its class was changed since, say, and rejects the
-- payload) must not make that transaction fail again and again, so the error becomes a
-- WARNING (which only the ending session sees) and the row's error, and a
-- callback_failed event on pgq_events names the callback and its chain or batch,
-- nothing more: any role of the database may LISTEN to pgq_events, and an error's text
-- may quote the payload (S45, S94). The callback is not queued.
CREATE OR REPLACE FUNCTION pgq._dispatch_callback(
    p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uuid uuid;
BEGIN
    BEGIN
        SELECT u INTO v_uuid
        FROM pgq._dispatch(p_job, ARRAY[p_payload], queue => p_queue,
                           p_chain_id => coalesce(p_chain, p_batch), p_chain_step => 0) u;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pgq: callback % could not be queued: % (SQLSTATE %)', p_job, SQLERRM, SQLSTATE;
        PERFORM pg_notify('pgq_events', json_build_object('event', 'callback_failed', 'job', p_job,
            'chain_id', p_payload ->> 'chain_id', 'batch_id', p_payload ->> 'batch_id')::text);
        INSERT INTO pgq.callbacks (batch_id, chain_id, kind, job, error)
        VALUES (CASE WHEN p_chain IS NULL THEN p_batch END, p_chain, p_kind, p_job,
                format('%s (SQLSTATE %s)', SQLERRM, SQLSTATE));
        RETURN;
    END;
    INSERT INTO pgq.callbacks (batch_id, chain_id, kind, job, job_uuid, error)
    VALUES (CASE WHEN p_chain IS NULL THEN p_batch END, p_chain, p_kind, p_job, v_uuid,
            CASE WHEN v_uuid IS NULL THEN 'DroppedAsDuplicate: a unique lock on its key is held by another job' END);
END;
$$;

COMMENT ON FUNCTION pgq._dispatch_callback(text, text, jsonb, text, uuid, uuid) IS
    'Queues a chain''s on_failure or a batch callback and records it in pgq.callbacks (S97); an error becomes a WARNING, a callback_failed event and the row''s error, never a failed completion.';

-- pgq._chain_dispatch_step: queues step p_step of a chain (its batch too) and keeps its
-- job's uuid in job_uuids (S97). Returns the job's uuid, or NULL when the step was
-- dropped as a unique duplicate (S72). The first step is queued by the dispatching call,
-- within the ceilings of its role (S90); a later one was checked against them then
-- (pgq._chain_start's trial), and is queued inside a worker's transaction, whose role is
-- not the one that chose its options.
CREATE OR REPLACE FUNCTION pgq._chain_dispatch_step(p_chain pgq.job_chains, p_step int) RETURNS uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uuid uuid;
BEGIN
    v_uuid := (pgq._dispatch_entries(jsonb_build_array(p_chain.steps -> (p_step - 1)), p_chain.queue,
                                     p_chain.batch_id, p_chain.id, p_step, p_ceilings => p_step = 1,
                                     p_traceparent => p_chain.traceparent, p_tracestate => p_chain.tracestate))[1];
    UPDATE pgq.job_chains c
    SET step = p_step, job_uuid = v_uuid,
        job_uuids = (c.job_uuids || array_fill(NULL::uuid, ARRAY[greatest(p_step - 1 - cardinality(c.job_uuids), 0)]))[1:p_step - 1]
                    || v_uuid
    WHERE c.id = p_chain.id;
    RETURN v_uuid;
END;
$$;

COMMENT ON FUNCTION pgq._chain_dispatch_step(pgq.job_chains, int) IS 'Queues one step of a chain; NULL when it was dropped as a unique duplicate.';

-- pgq._chain_stop: the chain ends at its current step: 'failed' (a step failed for good,
-- or was dropped as a duplicate: on_failure is dispatched with the chain id, the step, its
-- job and the exception, S71 S72) or 'cancelled' (no on_failure, S74).
CREATE OR REPLACE FUNCTION pgq._chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE pgq.job_chains c SET state = p_state, exception = p_exception, finished_at = now()
    WHERE c.id = p_chain.id;
    IF p_state = 'failed' AND p_chain.on_failure IS NOT NULL THEN
        PERFORM pgq._dispatch_callback('on_failure', p_chain.on_failure,
            jsonb_build_object('chain_id', p_chain.id, 'batch_id', p_chain.batch_id, 'step', p_chain.step,
                               'job', p_chain.steps -> (p_chain.step - 1) ->> 'job', 'job_uuid', p_job,
                               'exception', p_exception),
            p_chain.queue, NULL, p_chain.id);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._chain_stop(pgq.job_chains, text, uuid, text) IS 'Ends a chain as failed (dispatching on_failure) or cancelled (S71, S72, S74).';

-- pgq._chain_start: writes a chain and queues its first step. Returns the chain's row;
-- its state is already 'failed' when the first step was dropped as a duplicate (S72).
-- p_traceparent, p_tracestate: the trace context its steps carry (S107), the
-- transaction's when NULL (pgq._trace_context).
CREATE OR REPLACE FUNCTION pgq._chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid,
                                            p_traceparent text DEFAULT NULL, p_tracestate text DEFAULT NULL)
RETURNS pgq.job_chains
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_chain pgq.job_chains;
    v_uuid  uuid;
BEGIN
    -- Steps after the first are queued later, inside other jobs' completions. Queue them
    -- now on trial and roll the trial back (PQ999 below), so that a step pgq.dispatch
    -- would refuse (a bad option, a timeout of 0, a missing key) is refused here, by the
    -- caller, with nothing written.
    IF jsonb_array_length(p_steps) > 1 THEN
        BEGIN
            PERFORM pgq._dispatch_entries(p_steps - 0, p_queue, NULL, NULL, NULL);
            RAISE EXCEPTION 'pgq: trial dispatch of a chain''s steps' USING ERRCODE = 'PQ999';
        EXCEPTION WHEN SQLSTATE 'PQ999' THEN
            NULL;  -- every step can be queued
        END;
    END IF;
    -- Every step carries the trace context of the chain's dispatch (S107): a later one is
    -- queued in a worker's transaction.
    INSERT INTO pgq.job_chains (id, batch_id, steps, on_failure, queue, traceparent, tracestate)
    SELECT p_id, p_batch, p_steps, p_on_failure, p_queue, t.traceparent, t.tracestate
    FROM pgq._trace_context(p_traceparent, p_tracestate) t
    RETURNING * INTO v_chain;
    v_uuid := pgq._chain_dispatch_step(v_chain, 1);
    IF v_uuid IS NULL THEN
        PERFORM pgq._chain_stop(v_chain, 'failed', NULL, pgq._dropped_message(v_chain, 1));
        v_chain.state := 'failed';
    END IF;
    v_chain.job_uuid := v_uuid;
    RETURN v_chain;
END;
$$;

COMMENT ON FUNCTION pgq._chain_start(uuid, jsonb, text, text, uuid, text, text) IS 'Writes a chain and queues its first step (S70); the chain fails at once when that step is a dropped duplicate (S72).';

-- pgq._dropped_message: why a chain stopped at a step dropped as a unique duplicate.
CREATE OR REPLACE FUNCTION pgq._dropped_message(p_chain pgq.job_chains, p_step int) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('DroppedAsDuplicate: step %s (%s) of chain %s was not queued: a unique lock on its key is held by another job',
                  p_step, p_chain.steps -> (p_step - 1) ->> 'job', p_chain.id);
$$;

COMMENT ON FUNCTION pgq._dropped_message(pgq.job_chains, int) IS 'The exception of a chain whose step was dropped as a unique duplicate (S72).';

-- pgq.dispatch_chain: queues the first of steps (a JSON array of {"job", "payload", and
-- any option of pgq.dispatch}) in the caller's transaction and returns the chain's id.
-- Each later step is queued by the transaction that completes the one before (S70), with
-- its own tries and backoff; a step that fails for good stops the chain and on_failure
-- (a job name) is queued with {"chain_id", "step", "job", "job_uuid", "exception"}
-- (S71). queue applies to every step (and on_failure) that names none. A step dropped
-- as a unique duplicate fails the chain like a step failing for good (S72).
-- Every step carries the trace context traceparent, tracestate, or the transaction's
-- (S105, S107). Raises 22023 for bad steps or trace context, writing nothing.
CREATE OR REPLACE FUNCTION pgq.dispatch_chain(steps jsonb, on_failure text DEFAULT NULL, queue text DEFAULT NULL,
                                              traceparent text DEFAULT NULL, tracestate text DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid := (pgq._uuid7s(1))[1];
BEGIN
    PERFORM pgq._check_entries('chain steps', dispatch_chain.steps, false);
    IF dispatch_chain.on_failure IS NOT NULL THEN
        PERFORM pgq._check_name('job', dispatch_chain.on_failure);
    END IF;
    IF dispatch_chain.queue IS NOT NULL THEN
        PERFORM pgq._check_name('queue', dispatch_chain.queue);
    END IF;
    PERFORM pgq._chain_start(v_id, dispatch_chain.steps, dispatch_chain.on_failure, dispatch_chain.queue, NULL,
                             dispatch_chain.traceparent, dispatch_chain.tracestate);
    RETURN v_id;
END;
$$;

COMMENT ON FUNCTION pgq.dispatch_chain(jsonb, text, text, text, text) IS
    'Queues a chain: step n+1 is queued when step n completes (S70); a step failing for good, or dropped as a duplicate, stops it and queues on_failure (S71, S72). Returns the chain id.';

-- pgq._batch_add: dispatches entries (jobs, and {"chain": [...]} entries) into a batch
-- and counts them in its shards. Locks the touched shards (in order) before the batch's
-- row. Returns the members whose chain failed at once (their first step was a dropped
-- duplicate), for the caller to end after counting: pgq._jobs_ended. The members carry
-- the trace context p_traceparent, p_tracestate, or the transaction's when NULL (S107).
CREATE OR REPLACE FUNCTION pgq._batch_add(p_batch pgq.job_batches, p_entries jsonb,
                                          p_traceparent text DEFAULT NULL, p_tracestate text DEFAULT NULL) RETURNS int
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queue   text := p_batch.options ->> 'queue';
    v_plain   jsonb;
    v_members uuid[];
    v_chain   pgq.job_chains;
    v_failed  pgq.job_chains[] := '{}';
    v_entry   jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') INTO v_plain
    FROM jsonb_array_elements(p_entries) WITH ORDINALITY AS x(e, n) WHERE NOT e ? 'chain';
    IF jsonb_array_length(v_plain) > 0 THEN
        -- a dropped unique duplicate is no member: it never existed (S21)
        v_members := ARRAY(SELECT u FROM unnest(pgq._dispatch_entries(v_plain, v_queue, p_batch.id, NULL, NULL,
                                                                     p_traceparent => p_traceparent,
                                                                     p_tracestate => p_tracestate)) u
                           WHERE u IS NOT NULL);
    ELSE
        v_members := '{}';
    END IF;
    FOR v_entry IN SELECT e FROM jsonb_array_elements(p_entries) e WHERE e ? 'chain' LOOP
        v_chain := pgq._chain_start((pgq._uuid7s(1))[1], v_entry -> 'chain', v_entry ->> 'on_failure',
                                    coalesce(v_entry ->> 'queue', v_queue), p_batch.id, p_traceparent, p_tracestate);
        v_members := v_members || v_chain.id;
        IF v_chain.state = 'failed' THEN
            v_failed := v_failed || v_chain;
        END IF;
    END LOOP;

    -- Count the members: every shard first, in order (a chain that failed at once below
    -- may cancel the batch, which takes them all), then the batch row.
    PERFORM FROM pgq.batch_counts c WHERE c.batch_id = p_batch.id ORDER BY c.shard FOR UPDATE;
    UPDATE pgq.batch_counts c SET pending = c.pending + d.n
    FROM (SELECT pgq._batch_shard(m) AS shard, count(*)::int AS n FROM unnest(v_members) m GROUP BY 1) d
    WHERE c.batch_id = p_batch.id AND c.shard = d.shard;
    UPDATE pgq.job_batches b SET total_jobs = b.total_jobs + cardinality(v_members) WHERE b.id = p_batch.id;

    FOREACH v_chain IN ARRAY v_failed LOOP
        PERFORM pgq._batch_members_ended(p_batch.id, ARRAY[v_chain.id], 'failed', NULL, pgq._dropped_message(v_chain, 1));
    END LOOP;
    RETURN cardinality(v_members);
END;
$$;

COMMENT ON FUNCTION pgq._batch_add(pgq.job_batches, jsonb, text, text) IS 'Dispatches entries into a batch and counts them in its shards (S73); returns how many members it added.';

-- pgq.dispatch_batch: queues jobs (a JSON array of {"job", "payload", options}, or
-- {"chain": [steps], "on_failure": job} for a chain, which counts as one member) as one
-- batch in the caller's transaction and returns its id (S73). then_job runs once when
-- every member succeeded; catch_job once at the first member to fail for good;
-- finally_job once when every member has finished (succeeded, failed for good or been
-- cancelled). Each gets {"batch_id", "name", "total_jobs", "pending_jobs",
-- "failed_jobs", "failed_job_ids", "cancelled"} (catch_job also "failed_job" and
-- "exception"). Without allow_failures the first failure also cancels the batch
-- (pgq.cancel_batch). queue applies to members and callbacks that name none. The login
-- role that calls it is recorded (dispatched_by): it may add to the batch (S93).
-- Every member carries the trace context traceparent, tracestate, or the transaction's
-- (S105, S107). Raises 22023 for bad input, writing nothing.
CREATE OR REPLACE FUNCTION pgq.dispatch_batch(
    jobs           jsonb,
    name           text DEFAULT NULL,
    then_job       text DEFAULT NULL,
    catch_job      text DEFAULT NULL,
    finally_job    text DEFAULT NULL,
    allow_failures boolean DEFAULT false,
    queue          text DEFAULT NULL,
    traceparent    text DEFAULT NULL,
    tracestate     text DEFAULT NULL
) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batch pgq.job_batches;
    v_job   text;
BEGIN
    PERFORM pgq._check_entries('batch jobs', dispatch_batch.jobs, true);
    FOREACH v_job IN ARRAY ARRAY[dispatch_batch.then_job, dispatch_batch.catch_job, dispatch_batch.finally_job] LOOP
        IF v_job IS NOT NULL THEN
            PERFORM pgq._check_name('job', v_job);
        END IF;
    END LOOP;
    IF dispatch_batch.queue IS NOT NULL THEN
        PERFORM pgq._check_name('queue', dispatch_batch.queue);
    END IF;
    IF length(dispatch_batch.name) > 1000 THEN
        RAISE EXCEPTION 'pgq: a batch name is at most 1,000 characters, got %', length(dispatch_batch.name)
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.job_batches (id, name, dispatched_by, options)
    VALUES ((pgq._uuid7s(1))[1], dispatch_batch.name, session_user,
            jsonb_strip_nulls(jsonb_build_object(
                'then_job', dispatch_batch.then_job, 'catch_job', dispatch_batch.catch_job,
                'finally_job', dispatch_batch.finally_job,
                'allow_failures', coalesce(dispatch_batch.allow_failures, false), 'queue', dispatch_batch.queue)))
    RETURNING * INTO v_batch;
    INSERT INTO pgq.batch_counts (batch_id, shard) SELECT v_batch.id, s FROM generate_series(0, 15) s;
    PERFORM pgq._batch_add(v_batch, dispatch_batch.jobs, dispatch_batch.traceparent, dispatch_batch.tracestate);
    -- Every member a dropped duplicate: nothing will end it, so it ends here.
    PERFORM pgq._batch_settle(v_batch.id) WHERE NOT EXISTS (
        SELECT FROM pgq.batch_counts c WHERE c.batch_id = v_batch.id AND c.pending > 0);
    RETURN v_batch.id;
END;
$$;

COMMENT ON FUNCTION pgq.dispatch_batch(jsonb, text, text, text, text, boolean, text, text, text) IS
    'Queues jobs (and chains) as one batch; then_job when all succeeded, catch_job at the first failure, finally_job when all finished, each once (S73-S76). Returns the batch id.';

-- pgq._may_add_to_batch: whether the caller may add to this batch (S93): a running
-- member of it, which shows its job's uuid and lease token (a SQL handler's
-- transaction has them in pgq.job_uuid and pgq.job_token, set by pgq.run_sql_job), or
-- the login role that dispatched it, or a role that is a member of that one (which
-- could act as it anyway; a superuser is). A batch dispatched before pgq recorded who
-- dispatched it may be added to by any role that may call pgq.add_to_batch. The token
-- is the proof: a setting any session may SET, it is worth only the lease token it
-- names, which pgq gives to the worker that reserved the job and to no one else.
CREATE OR REPLACE FUNCTION pgq._may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_batch.dispatched_by IS NULL
       OR (to_regrole(quote_ident(p_batch.dispatched_by)) IS NOT NULL
           AND pg_has_role(session_user, p_batch.dispatched_by, 'MEMBER')) THEN
        RETURN true;
    END IF;
    RETURN p_job IS NOT NULL AND p_token IS NOT NULL AND EXISTS (
        SELECT FROM pgq.jobs j
        WHERE j.slot = pgq._token_slot(p_token) AND j.uuid = p_job AND j.lease_token = p_token
          AND j.batch_id = p_batch.id);
END;
$$;

COMMENT ON FUNCTION pgq._may_add_to_batch(pgq.job_batches, uuid, uuid) IS
    'Whether the caller may add to a batch: a running member of it (its job''s uuid and lease token), or the role that dispatched it or a member of that role (S93).';

-- pgq.add_to_batch: adds jobs (as in pgq.dispatch_batch) to a batch that has not
-- finished and is not cancelled. Returns how many members were added. Only a running
-- member of the batch, or the role that dispatched it, may add (S93): a running job
-- shows its uuid and lease token as job and token (a SQL handler need not: its
-- transaction's pgq.job_uuid and pgq.job_token are taken when both are NULL). Raises
-- 22023 for bad input, 42501 when the caller may not add, PQ003 when the batch has
-- finished or was cancelled, P0002 when there is no such batch; nothing is written then.
CREATE OR REPLACE FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid DEFAULT NULL, token uuid DEFAULT NULL)
RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batch pgq.job_batches;
    v_job   uuid := add_to_batch.job;
    v_token uuid := add_to_batch.token;
    v_n     int;
BEGIN
    PERFORM pgq._check_entries('batch jobs', add_to_batch.jobs, true);
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = add_to_batch.batch;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: no batch %', add_to_batch.batch USING ERRCODE = 'P0002';
    END IF;
    IF v_job IS NULL AND v_token IS NULL THEN
        -- a SQL handler's own job (pgq.run_sql_job); text a session set that is not a
        -- uuid proves nothing, so it is no error either
        v_job := CASE WHEN current_setting('pgq.job_uuid', true) ~* '^[0-9a-f-]{36}$'
                      THEN current_setting('pgq.job_uuid', true)::uuid END;
        v_token := CASE WHEN current_setting('pgq.job_token', true) ~* '^[0-9a-f-]{36}$'
                        THEN current_setting('pgq.job_token', true)::uuid END;
    END IF;
    IF NOT pgq._may_add_to_batch(v_batch, v_job, v_token) THEN
        RAISE EXCEPTION 'pgq: % may not add to batch %: only the role that dispatched it and its running jobs may',
            session_user, add_to_batch.batch
            USING ERRCODE = '42501',
                  HINT = 'A running job of the batch passes its uuid and lease token (job =>, token =>); a SQL handler''s are taken from its transaction.';
    END IF;
    v_n := pgq._batch_add(v_batch, add_to_batch.jobs);
    -- Checked after counting, under the batch row's lock (taken last, like every path):
    -- a batch that finished or was cancelled meanwhile is seen here, and this rolls back.
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = add_to_batch.batch FOR UPDATE;
    IF v_batch.finished_at IS NOT NULL OR v_batch.cancelled_at IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: batch % has % : no job can be added', add_to_batch.batch,
            CASE WHEN v_batch.cancelled_at IS NOT NULL THEN 'been cancelled' ELSE 'finished' END
            USING ERRCODE = 'PQ003';
    END IF;
    RETURN v_n;
END;
$$;

COMMENT ON FUNCTION pgq.add_to_batch(uuid, jsonb, uuid, uuid) IS
    'Adds jobs (and chains) to a running batch (S73), from a running member of it (job, token) or the role that dispatched it (S93); 42501 for anyone else, PQ003 when it has finished or was cancelled. Returns how many members were added.';

-- pgq._batch_callback: queues the batch's callback of kind p_kind (then, catch or
-- finally: options ->> 'then_job', ...) with the batch's figures, when it has one.
CREATE OR REPLACE FUNCTION pgq._batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job    text := p_batch.options ->> (p_kind || '_job');
    v_counts record;
BEGIN
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    SELECT coalesce(sum(c.pending), 0) AS pending, coalesce(sum(c.failed), 0) AS failed INTO v_counts
    FROM pgq.batch_counts c WHERE c.batch_id = p_batch.id;
    PERFORM pgq._dispatch_callback(p_kind, v_job,
        jsonb_build_object('batch_id', p_batch.id, 'name', p_batch.name, 'total_jobs', p_batch.total_jobs,
                           'pending_jobs', v_counts.pending + v_counts.failed, 'failed_jobs', v_counts.failed,
                           'failed_job_ids', to_jsonb(p_batch.failed_job_ids),
                           'cancelled', p_batch.cancelled_at IS NOT NULL) || p_extra,
        p_batch.options ->> 'queue', p_batch.id, NULL);
END;
$$;

COMMENT ON FUNCTION pgq._batch_callback(pgq.job_batches, text, jsonb) IS 'Queues a batch callback (then, catch, finally) with the batch''s id, name and figures.';

-- pgq._batch_settle: called with the batch's shards that this transaction brought to 0
-- pending still locked. Locks the batch's row and sums the shards in a new snapshot:
-- every other transaction that ended members of the batch either committed before this
-- lock was granted (and is seen), or brings a shard to 0 itself later and settles after
-- this one. So the batch's end is found once, by the last: then finished_at is set and
-- then_job (every member succeeded, never cancelled) and finally_job are queued, each
-- at most once ever (then_at, finally_at).
CREATE OR REPLACE FUNCTION pgq._batch_settle(p_batch uuid) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batch  pgq.job_batches;
    v_counts record;
BEGIN
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = p_batch FOR UPDATE;
    SELECT coalesce(sum(c.pending), 0) AS pending, coalesce(sum(c.failed), 0) AS failed,
           coalesce(sum(c.cancelled), 0) AS cancelled
    INTO v_counts
    FROM pgq.batch_counts c WHERE c.batch_id = p_batch;
    IF v_counts.pending > 0 THEN
        RETURN;
    END IF;
    UPDATE pgq.job_batches b SET finished_at = coalesce(b.finished_at, now()) WHERE b.id = p_batch;
    IF v_batch.then_at IS NULL AND v_counts.failed = 0 AND v_counts.cancelled = 0 AND v_batch.cancelled_at IS NULL THEN
        UPDATE pgq.job_batches b SET then_at = now() WHERE b.id = p_batch;
        PERFORM pgq._batch_callback(v_batch, 'then');
    END IF;
    IF v_batch.finally_at IS NULL THEN
        UPDATE pgq.job_batches b SET finally_at = now() WHERE b.id = p_batch;
        PERFORM pgq._batch_callback(v_batch, 'finally');
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._batch_settle(uuid) IS 'Finds whether a batch has ended, under its row''s lock, and queues then_job and finally_job once each (S73, S75).';

-- pgq._batch_cancel_waiting: cancels the batch's waiting jobs that no other transaction
-- holds (SKIP LOCKED: those are being reserved or ended right now; a job reserved after
-- this commits is cancelled at pickup, S74). Each is recorded as cancelled in
-- pgq.attempts and in pgq.job_ends, whose trigger ends its chain and counts it in the
-- batch, as for a job the core ends (S97). The caller holds every shard of the batch and
-- its row. Returns how many jobs were cancelled.
CREATE OR REPLACE FUNCTION pgq._batch_cancel_waiting(p_batch uuid, p_reason text) RETURNS int
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n int;
BEGIN
    WITH gone AS (
        DELETE FROM pgq.jobs j
        WHERE j.uuid = ANY (ARRAY(SELECT w.uuid FROM pgq.jobs w
                                  WHERE w.batch_id = p_batch AND w.reserved_at IS NULL
                                  FOR UPDATE SKIP LOCKED))
        RETURNING j.*
    ), recorded AS (
        INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, finished_at, outcome, exception)
        SELECT g.uuid, g.job, g.queue, g.attempts, now(), 'cancelled', p_reason FROM gone g
    ), unique_gone AS (
        DELETE FROM pgq.unique_locks u USING gone g
        WHERE g.unique_key IS NOT NULL AND u.key = g.unique_key AND u.owner = g.unique_token
    ), debounce_gone AS (
        DELETE FROM pgq.debounce_tokens d USING gone g
        WHERE g.debounce_key IS NOT NULL AND d.key = g.debounce_key AND d.token = g.debounce_token
    ), ended AS (
        INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, chain_id, chain_step)
        SELECT g.uuid, 'cancelled', p_reason, g.batch_id, g.chain_id, g.chain_step FROM gone g ORDER BY g.id
    )
    SELECT count(*) INTO v_n FROM gone;
    RETURN v_n;
END;
$$;

COMMENT ON FUNCTION pgq._batch_cancel_waiting(uuid, text) IS 'Cancels a batch''s waiting jobs not held by another transaction; their ends in pgq.job_ends count them as cancelled (S74, S97).';

-- pgq._batch_members_ended: members of one batch ended: 'succeeded', 'failed' (failed
-- for good; p_job is the failed job for failed_job_ids) or 'cancelled'. Updates their
-- shards (in order), and when a failure is the batch's first queues catch_job and,
-- without allow_failures, cancels the batch (S75); settles the batch when a shard
-- reached 0. A failure or cancellation locks every shard of the batch first: it may
-- cancel the rest.
CREATE OR REPLACE FUNCTION pgq._batch_members_ended(
    p_batch uuid, p_members uuid[], p_outcome text, p_job uuid DEFAULT NULL, p_exception text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_zero  boolean;
    v_first boolean;
    v_batch pgq.job_batches;
BEGIN
    IF p_outcome = 'succeeded' THEN
        PERFORM FROM pgq.batch_counts c
        WHERE c.batch_id = p_batch AND c.shard IN (SELECT DISTINCT pgq._batch_shard(m) FROM unnest(p_members) m)
        ORDER BY c.shard FOR UPDATE;
    ELSE
        PERFORM FROM pgq.batch_counts c WHERE c.batch_id = p_batch ORDER BY c.shard FOR UPDATE;
    END IF;
    WITH d AS (
        SELECT pgq._batch_shard(m) AS shard, count(*)::int AS n FROM unnest(p_members) m GROUP BY 1
    ), counted AS (
        UPDATE pgq.batch_counts c
        SET pending = c.pending - d.n,
            failed = c.failed + CASE WHEN p_outcome = 'failed' THEN d.n ELSE 0 END,
            cancelled = c.cancelled + CASE WHEN p_outcome = 'cancelled' THEN d.n ELSE 0 END
        FROM d
        WHERE c.batch_id = p_batch AND c.shard = d.shard
        RETURNING c.pending
    )
    SELECT coalesce(bool_or(pending = 0), false) INTO v_zero FROM counted;

    IF p_outcome = 'failed' THEN
        SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = p_batch FOR UPDATE;
        v_first := v_batch.catch_at IS NULL;
        UPDATE pgq.job_batches b
        SET failed_job_ids = CASE WHEN p_job IS NULL OR p_job = ANY (b.failed_job_ids) THEN b.failed_job_ids
                                  ELSE b.failed_job_ids || p_job END,
            catch_at = coalesce(b.catch_at, now())
        WHERE b.id = p_batch
        RETURNING * INTO v_batch;
        IF v_first THEN
            PERFORM pgq._batch_callback(v_batch, 'catch',
                                        jsonb_build_object('failed_job', p_job, 'exception', p_exception));
            IF NOT coalesce((v_batch.options ->> 'allow_failures')::boolean, false) AND v_batch.cancelled_at IS NULL THEN
                UPDATE pgq.job_batches b SET cancelled_at = now() WHERE b.id = p_batch;
                PERFORM pgq._batch_cancel_waiting(p_batch,
                    format('cancelled: batch %s failed at job %s and does not allow failures', p_batch, p_job));
                v_zero := true;  -- settle sums the shards: it finds out
            END IF;
        END IF;
    END IF;
    IF v_zero THEN
        PERFORM pgq._batch_settle(p_batch);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._batch_members_ended(uuid, uuid[], text, uuid, text) IS
    'Counts ended members of a batch in their shards; the first failure queues catch_job and, without allow_failures, cancels the batch (S75); settles the batch when a shard reached 0 (S76).';

-- pgq._jobs_ended: jobs that carried a batch or a chain ended, all the same way:
-- 'succeeded' (pgq.complete), 'failed' (failed for good: pgq._bury) or 'cancelled'
-- (pgq._cancel, a cancelled batch at pickup, a debounced or dont_release drop). A chain's
-- step that succeeded queues the next step in this transaction (S70), unless its batch
-- was cancelled; any other end stops the chain (S71, S74). A member of a batch (a job,
-- or a chain that ended) is counted (S73). Arrays run in parallel, one entry per job.
CREATE OR REPLACE FUNCTION pgq._jobs_ended(
    p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps int[], p_exception text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batches  uuid[] := '{}';  -- members of batches that ended: batch, member, outcome, job, exception
    v_members  uuid[] := '{}';
    v_outcomes text[] := '{}';
    v_jobs     uuid[] := '{}';
    v_texts    text[] := '{}';
    v_chain    pgq.job_chains;
    v_outcome  text;
    v_text     text;
    v_next     uuid;
    v_group    record;
    i          int;
BEGIN
    -- Lone jobs of batches, in one statement (a completion may carry hundreds).
    SELECT coalesce(array_agg(e.b), '{}'), coalesce(array_agg(e.u), '{}'),
           coalesce(array_agg(p_outcome), '{}'), coalesce(array_agg(e.u), '{}'), coalesce(array_agg(p_exception), '{}')
    INTO v_batches, v_members, v_outcomes, v_jobs, v_texts
    FROM unnest(p_uuids, p_batches, p_chains) AS e(u, b, c)
    WHERE e.c IS NULL AND e.b IS NOT NULL;

    -- Steps of chains, one by one.
    FOR i IN 1 .. coalesce(cardinality(p_uuids), 0) LOOP
        CONTINUE WHEN p_chains[i] IS NULL;
        v_outcome := p_outcome;
        v_text := p_exception;
        SELECT * INTO v_chain FROM pgq.job_chains c WHERE c.id = p_chains[i] FOR UPDATE;
        -- a chain already ended (or pruned) is not moved by a late or repeated end
        CONTINUE WHEN NOT FOUND OR v_chain.state <> 'running' OR v_chain.step <> p_steps[i];
        IF p_outcome = 'succeeded' AND v_chain.step < jsonb_array_length(v_chain.steps) THEN
            IF v_chain.batch_id IS NOT NULL
               AND EXISTS (SELECT FROM pgq.job_batches b WHERE b.id = v_chain.batch_id AND b.cancelled_at IS NOT NULL) THEN
                v_outcome := 'cancelled';
                v_text := format('cancelled: batch %s was cancelled', v_chain.batch_id);
                PERFORM pgq._chain_stop(v_chain, 'cancelled', p_uuids[i], v_text);
            ELSE
                -- A step that cannot be queued (its class changed since the chain
                -- was dispatched, say) must not make this completion fail again and
                -- again: the chain fails at that step instead (S72).
                BEGIN
                    v_next := pgq._chain_dispatch_step(v_chain, v_chain.step + 1);
                    IF v_next IS NULL THEN
                        v_text := pgq._dropped_message(v_chain, v_chain.step + 1);
                    END IF;
                EXCEPTION WHEN OTHERS THEN
                    v_next := NULL;
                    v_text := format('StepNotQueued: step %s (%s) of chain %s could not be queued: %s (SQLSTATE %s)',
                                     v_chain.step + 1, v_chain.steps -> v_chain.step ->> 'job', v_chain.id, SQLERRM, SQLSTATE);
                END;
                CONTINUE WHEN v_next IS NOT NULL;  -- the chain goes on: its member has not ended
                v_outcome := 'failed';
                v_chain.step := v_chain.step + 1;
                UPDATE pgq.job_chains c SET step = v_chain.step, job_uuid = NULL WHERE c.id = v_chain.id;
                PERFORM pgq._chain_stop(v_chain, 'failed', NULL, v_text);
            END IF;
        ELSIF p_outcome = 'succeeded' THEN
            UPDATE pgq.job_chains c SET state = 'succeeded', finished_at = now() WHERE c.id = v_chain.id;
        ELSE
            PERFORM pgq._chain_stop(v_chain, CASE WHEN p_outcome = 'failed' THEN 'failed' ELSE 'cancelled' END,
                                    p_uuids[i], p_exception);
        END IF;
        CONTINUE WHEN v_chain.batch_id IS NULL;
        v_batches := v_batches || v_chain.batch_id;
        v_members := v_members || v_chain.id;
        v_outcomes := v_outcomes || v_outcome;
        v_jobs := v_jobs || p_uuids[i];
        v_texts := v_texts || v_text;
    END LOOP;

    -- One call per batch and outcome (per member for failures: each is recorded), in
    -- batch order: the locks of one batch are all taken before the next's.
    FOR v_group IN
        SELECT e.batch, e.outcome, array_agg(e.member) AS members, min(e.job::text)::uuid AS job, min(e.txt) AS txt
        FROM unnest(v_batches, v_members, v_outcomes, v_jobs, v_texts) AS e(batch, member, outcome, job, txt)
        GROUP BY e.batch, e.outcome, CASE WHEN e.outcome = 'failed' THEN e.member END
        ORDER BY e.batch, e.outcome
    LOOP
        PERFORM pgq._batch_members_ended(v_group.batch, v_group.members, v_group.outcome, v_group.job, v_group.txt);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._jobs_ended(text, uuid[], uuid[], uuid[], int[], text) IS
    'Moves the chains and batches of jobs that ended (succeeded, failed for good, cancelled): next step or chain stop (S70-S72, S74), batch counts and callbacks (S73-S76).';

-- pgq._job_ends_advance: the trigger by which the workflows learn that jobs ended
-- (pgq.job_ends, written by the core in the ending transaction, or by a batch's cancel):
-- a callback's end (chain_step 0) is copied to its pgq.callbacks row (S97); the chains
-- and batches of the others move on, in the order the jobs were recorded.
CREATE OR REPLACE FUNCTION pgq._job_ends_advance() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    UPDATE pgq.callbacks c SET outcome = e.outcome, exception = e.exception, ended_at = e.ended_at
    FROM ended e
    WHERE e.chain_step = 0 AND c.job_uuid = e.job_uuid;
    FOR r IN
        SELECT e.outcome, e.exception, array_agg(e.job_uuid ORDER BY e.id) AS uuids, array_agg(e.batch_id ORDER BY e.id) AS batches,
               array_agg(e.chain_id ORDER BY e.id) AS chains, array_agg(e.chain_step ORDER BY e.id) AS steps
        FROM ended e
        WHERE e.chain_step IS DISTINCT FROM 0
        GROUP BY e.outcome, e.exception
        ORDER BY min(e.id)
    LOOP
        PERFORM pgq._jobs_ended(r.outcome, r.uuids, r.batches, r.chains, r.steps, r.exception);
    END LOOP;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._job_ends_advance() IS
    'Trigger on pgq.job_ends: records callbacks'' ends (S97), moves the chains and counts the batches of the other jobs that ended (S70-S76).';

-- ALWAYS: a session in replica mode (session_replication_role) ends jobs too.
CREATE OR REPLACE TRIGGER job_ends_advance AFTER INSERT ON pgq.job_ends
    REFERENCING NEW TABLE AS ended
    FOR EACH STATEMENT EXECUTE FUNCTION pgq._job_ends_advance();
ALTER TABLE pgq.job_ends ENABLE ALWAYS TRIGGER job_ends_advance;

-- pgq.cancel_batch: cancels a batch: its waiting jobs are cancelled now, a job reserved
-- after this commits is cancelled at pickup, running jobs finish (S74). then_job will not
-- run; catch_job does not run for the cancel; finally_job runs once every member has
-- finished. Returns how many waiting jobs were cancelled, or NULL when there is no such
-- batch. Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.cancel_batch(batch uuid) RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batch pgq.job_batches;
    v_n     int;
BEGIN
    PERFORM FROM pgq.batch_counts c WHERE c.batch_id = cancel_batch.batch ORDER BY c.shard FOR UPDATE;
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = cancel_batch.batch FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    UPDATE pgq.job_batches b SET cancelled_at = coalesce(b.cancelled_at, now()) WHERE b.id = v_batch.id;
    v_n := pgq._batch_cancel_waiting(v_batch.id, 'cancelled by ' || session_user || ' with its batch');
    PERFORM pgq._record_action('cancel', NULL, v_batch.options ->> 'queue',
                               format('batch %s cancelled: %s waiting jobs', v_batch.id, v_n));
    PERFORM pgq._batch_settle(v_batch.id);
    RETURN v_n;
END;
$$;

COMMENT ON FUNCTION pgq.cancel_batch(uuid) IS
    'Cancels a batch: waiting jobs now, later pickups before they run, running ones finish; no callback but finally_job (S74). Returns the waiting jobs cancelled; NULL when there is no such batch.';

-- pgq.job_batch: the batch of a live job (for a handler: job.Batch() in Go), or NULL.
CREATE OR REPLACE FUNCTION pgq.job_batch(job uuid) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT j.batch_id FROM pgq.jobs j WHERE j.uuid = job_batch.job;
$$;

COMMENT ON FUNCTION pgq.job_batch(uuid) IS 'The batch a live job belongs to, or NULL (S73).';

-- pgq._batches_prune: deletes batches that finished more than older_than ago with no
-- member left to end, and chains that ended that long ago (S39, S73). Returns the rows
-- deleted (counter shards, callbacks, and the ends of their jobs in pgq.job_ends, go
-- with them).
CREATE OR REPLACE FUNCTION pgq._batches_prune(p_older_than interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_count bigint;
    v_n     bigint;
BEGIN
    WITH gone AS (
        DELETE FROM pgq.job_chains c
        WHERE c.state <> 'running' AND c.finished_at < now() - p_older_than
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.chain_id = c.id)
        RETURNING c.id
    ), ends AS (
        DELETE FROM pgq.job_ends e WHERE e.chain_id IN (SELECT g.id FROM gone g)
    )
    SELECT count(*) INTO v_count FROM gone;
    WITH gone AS (
        DELETE FROM pgq.job_batches b
        WHERE b.finished_at < now() - p_older_than
          AND NOT EXISTS (SELECT FROM pgq.batch_counts c WHERE c.batch_id = b.id AND c.pending > 0)
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.batch_id = b.id)
        RETURNING b.id
    ), ends AS (
        -- its callbacks' ends carry its id as chain_id (S97)
        DELETE FROM pgq.job_ends e WHERE e.batch_id IN (SELECT g.id FROM gone g) OR e.chain_id IN (SELECT g.id FROM gone g)
    )
    SELECT count(*) INTO v_n FROM gone;
    RETURN v_count + v_n;
END;
$$;

COMMENT ON FUNCTION pgq._batches_prune(interval) IS 'Retention: deletes batches and chains that ended more than older_than ago and have no failed job left to retry.';

-- pgq.batches: Laravel's job_batches, one row per batch. pending_jobs counts, as
-- Laravel's does, members not yet succeeded (a failed one stays pending); progress is the
-- percentage of members finished (succeeded, failed for good or cancelled). state is
-- running or cancelling until every member finished; then failed when a member failed
-- for good (whether or not that cancelled the batch), cancelled when the batch or a
-- member was cancelled, else succeeded.
CREATE OR REPLACE VIEW pgq.batches AS
SELECT b.id, b.name, b.total_jobs,
       (c.pending + c.failed)::int AS pending_jobs, c.failed::int AS failed_jobs, b.failed_job_ids, b.options,
       b.cancelled_at, b.created_at, b.finished_at,
       c.pending::int AS unfinished_jobs, c.cancelled::int AS cancelled_jobs,
       (b.total_jobs - c.pending - c.failed - c.cancelled)::int AS succeeded_jobs,
       (CASE WHEN b.total_jobs = 0 THEN 100
             ELSE round(100.0 * (b.total_jobs - c.pending) / b.total_jobs, 1) END)::double precision AS progress,
       b.then_at, b.catch_at, b.finally_at,
       (CASE WHEN b.finished_at IS NULL THEN CASE WHEN b.cancelled_at IS NULL THEN 'running' ELSE 'cancelling' END
             WHEN c.failed > 0 THEN 'failed'
             WHEN b.cancelled_at IS NOT NULL OR c.cancelled > 0 THEN 'cancelled'
             ELSE 'succeeded' END)::text AS state
FROM pgq.job_batches b
CROSS JOIN LATERAL (SELECT coalesce(sum(s.pending), 0) AS pending, coalesce(sum(s.failed), 0) AS failed,
                           coalesce(sum(s.cancelled), 0) AS cancelled
                    FROM pgq.batch_counts s WHERE s.batch_id = b.id) c;

COMMENT ON VIEW pgq.batches IS
    'Batches with Laravel''s job_batches columns (pending_jobs counts failed members too, as Laravel''s does) plus unfinished, cancelled and succeeded members, progress (% finished), when each callback was queued, and state: running, cancelling (cancelled, members still running), or once finished failed (a member failed for good), cancelled (the batch or a member was) or succeeded.';

-- pgq.chains: one row per chain: its state, the step now queued (or where it stopped)
-- and its job; each step's job name and the uuid of each step's job once queued (S97).
-- steps, with their payloads, shows only to payload readers (S45).
CREATE OR REPLACE VIEW pgq.chains AS
SELECT c.id, c.batch_id, c.state, c.step, jsonb_array_length(c.steps) AS total_steps,
       (c.steps -> (c.step - 1) ->> 'job')::text AS job, c.job_uuid, c.on_failure, c.queue, c.exception,
       c.created_at, c.finished_at,
       (CASE WHEN (SELECT pgq._sees_payloads()) THEN c.steps END)::jsonb AS steps,
       c.job_uuids, ARRAY(SELECT s ->> 'job' FROM jsonb_array_elements(c.steps) WITH ORDINALITY AS x(s, n) ORDER BY x.n)::text[] AS step_jobs
FROM pgq.job_chains c;

COMMENT ON VIEW pgq.chains IS 'Chains: state (running, succeeded, failed, cancelled), the step queued or where it stopped, its job, why it stopped; steps (with payloads) only for payload readers; each step''s job name (step_jobs) and, once queued, its job uuid (job_uuids).';

-- pgq._jobs_retried: failed jobs of chains or batches are back (pgq.retry_failed): a
-- chain that stopped at the job's step runs again from it; a batch counts the member as
-- pending again and no longer as failed, and is no longer finished (S73). Callbacks that
-- ran stay run: each runs at most once.
CREATE OR REPLACE FUNCTION pgq._jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps int[])
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_batches uuid[] := '{}';
    v_members uuid[] := '{}';
    v_jobs    uuid[] := '{}';
    v_batch   uuid;
    i         int;
BEGIN
    -- A retried callback (chain_step 0) waits again: it has not ended (S97).
    UPDATE pgq.callbacks c SET outcome = NULL, exception = NULL, ended_at = NULL
    FROM unnest(p_uuids, p_steps) AS r(uuid, step)
    WHERE r.step = 0 AND c.job_uuid = r.uuid;
    FOR i IN 1 .. cardinality(p_uuids) LOOP
        CONTINUE WHEN p_steps[i] = 0;
        IF p_chains[i] IS NOT NULL THEN
            UPDATE pgq.job_chains c
            SET state = 'running', step = p_steps[i], job_uuid = p_uuids[i], exception = NULL, finished_at = NULL
            WHERE c.id = p_chains[i] AND c.state = 'failed' AND c.step = p_steps[i]
            RETURNING c.batch_id INTO v_batch;
            CONTINUE WHEN NOT FOUND OR v_batch IS NULL;
            v_batches := v_batches || v_batch;
            v_members := v_members || p_chains[i];
        ELSE
            CONTINUE WHEN p_batches[i] IS NULL;
            v_batches := v_batches || p_batches[i];
            v_members := v_members || p_uuids[i];
        END IF;
        v_jobs := v_jobs || p_uuids[i];
    END LOOP;
    FOR v_batch IN SELECT DISTINCT b FROM unnest(v_batches) b ORDER BY b LOOP
        PERFORM FROM pgq.batch_counts c WHERE c.batch_id = v_batch ORDER BY c.shard FOR UPDATE;
        UPDATE pgq.batch_counts c SET pending = c.pending + d.n, failed = c.failed - d.n
        FROM (SELECT pgq._batch_shard(e.m) AS shard, count(*)::int AS n
              FROM unnest(v_batches, v_members) AS e(b, m) WHERE e.b = v_batch GROUP BY 1) d
        WHERE c.batch_id = v_batch AND c.shard = d.shard;
        UPDATE pgq.job_batches b
        SET failed_job_ids = ARRAY(SELECT f FROM unnest(b.failed_job_ids) f WHERE f <> ALL (v_jobs)), finished_at = NULL
        WHERE b.id = v_batch;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._jobs_retried(uuid[], uuid[], uuid[], int[]) IS
    'Retried failed jobs of chains and batches: the chain resumes at the step, the batch counts the member pending again (S73).';
