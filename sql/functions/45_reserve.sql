-- The worker's pickup: pgq.reserve (leases S14, pickup checks S12 S23 S24, middleware, queue order S30) and napping (S31).

-- pgq._reported: a job as pgq.reserve reports it: to run (p_pickup NULL), or what
-- happened to it at pickup instead.
CREATE OR REPLACE FUNCTION pgq._reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text DEFAULT NULL)
RETURNS pgq.reservation
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN ROW(p_job.uuid, p_job.job, p_job.queue, p_job.payload, p_job.priority, p_job.attempts, p_job.tries,
               p_job.handler::text, p_job.timeout, p_job.lease_token, p_job.reserved_at, p_job.reserved_until,
               p_job.overlap_keys, p_job.created_at, p_pickup, p_note, p_middleware, NULL,
               p_job.traceparent, p_job.tracestate)::pgq.reservation;
END;
$$;

COMMENT ON FUNCTION pgq._reported(pgq.jobs, pgq.pickup, text, text) IS 'A job as pgq.reserve returns it: to run, or with what happened at pickup.';

-- The reserve is a pipeline, one stage per function, each called for a batch:
--   1. sweep        expired leases come back to waiting (S14, S35)     pgq._sweep_leases
--   2. pick         the next waiting jobs of a queue, locked (S30)     pgq._pick (storage)
--                   round-robin across keys in a fair queue (S115)     pgq._pick_fair (storage)
--   3. checks       jobs that must not run end before their handler:
--                   cancelled (S40, S74), superseded (S24), exhausted (S12)
--                                                                      pgq._pickup_checks
--   4. admission    middleware may turn jobs away (S26-S29)            pgq._admission
--   5. take         the others are reserved, their attempt counted (S5)
--                                                                      pgq._take_rows, pgq._take_chunk (storage)
--   6. report       every job is returned: to run, or what happened to it at pickup
--   7. waits        jobs left waiting for a concurrency_limited place wait only if no
--                   end of their key is under way and no place is free (S99)
--                                                                      pgq._concurrency_waits
-- An until-processing lock (S23) goes, and a debounce burst ends, only for a job whose
-- handler will run: at the stage that lets it through (checks, or admission for a job
-- with middleware); a turn-away keeps the lock.

-- pgq._handing_over: the handler of this job will run: its until-processing lock goes
-- now (S23, owner-checked, so a retry's release leaves a newer copy's lock alone), and
-- its debounce burst is over.
CREATE OR REPLACE FUNCTION pgq._handing_over(p_job pgq.jobs) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_job.unique_until = 'processing' THEN
        PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token], NULL, NULL);
    END IF;
    IF p_job.debounce_key IS NOT NULL THEN
        UPDATE pgq.debounce_tokens d SET burst_started_at = NULL
        WHERE d.key = p_job.debounce_key AND d.token = p_job.debounce_token;
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._handing_over(pgq.jobs) IS 'A picked job''s handler will run: its until-processing lock is released (S23) and its debounce burst ends.';

-- pgq._sweep_leases: stage 1 of pgq.reserve. Expired leases of these queues come back
-- to waiting (S14), each recorded as lease_expired, from where the session's last
-- sweep stopped (the cursor, S77). SKIP LOCKED: two workers never sweep the same row,
-- and a job being completed right now is left alone. A job with a SQL handler still
-- here did not commit (its completion is in the handler's transaction), so its attempt
-- is given back, up to pgq._max_give_backs() times (S35); a Go handler's outcome is
-- unknown, and its attempt counts. Overlap leases are left to run out (S34): a cut-off
-- worker cancels its handler only when it cannot renew them. Returns the cursor,
-- lowered to the jobs that came back.
CREATE OR REPLACE FUNCTION pgq._sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_low   timestamptz := pgq._sweep_from(p_cursor, p_queues, p_now);
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    r     record;
BEGIN
    -- Looked for first: setting up the sweep's statement costs more than a probe of
    -- jobs_lease_idx, and most calls find no lease to sweep.
    IF EXISTS (SELECT FROM pgq.jobs j
               WHERE j.reserved_until < p_now AND j.reserved_until >= v_low AND j.queue = ANY (p_queues)
                 AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])) THEN
        FOR r IN
        WITH expired AS (
            SELECT j.*, j.handler IS NOT NULL AND j.interruptions < pgq._max_give_backs() AS refund
            FROM pgq.jobs j
            WHERE j.reserved_until < p_now AND j.reserved_until >= v_low AND j.queue = ANY (p_queues)
              AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
            ORDER BY j.reserved_until
            LIMIT 1000
            FOR UPDATE SKIP LOCKED
        ), back AS (
            UPDATE pgq.jobs j
            SET reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL,
                started_at = NULL, overlap_keys = NULL, lease_expiries = j.lease_expiries + 1, wait_reason = 'lease_expired',
                attempts = j.attempts - e.refund::int, interruptions = j.interruptions + e.refund::int
            FROM expired e
            WHERE j.uuid = e.uuid
              AND j.uuid = ANY (ARRAY(SELECT x.uuid FROM expired x))  -- probes, whatever the plan (S78)
            RETURNING j.queue, j.priority, j.available_at, j.id
        ), recorded AS (
            INSERT INTO pgq.attempts
                (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome, exception)
            SELECT e.uuid, e.job, e.queue, e.attempts, e.reserved_by, e.lease_token, e.reserved_at, e.started_at,
                   e.reserved_until, 'lease_expired',
                   format('lease ended at %s without a heartbeat from worker %s', e.reserved_until, e.reserved_by)
                   || CASE WHEN e.refund THEN '; its SQL handler''s transaction did not commit: attempt given back' ELSE '' END
            FROM expired e
        )
        SELECT DISTINCT ON (b.queue, b.priority) b.queue, b.priority, b.available_at, b.id
        FROM back b
        ORDER BY b.queue, b.priority, b.available_at, b.id
        LOOP
            p_cursor := pgq._pick_lower(p_cursor, r.queue, r.priority, r.available_at, r.id);
        END LOOP;
        RETURN pgq._pick_swept(p_cursor, p_queues, v_low, p_now);
    END IF;
    RETURN pgq._pick_swept(p_cursor, p_queues, NULL, p_now);  -- no lease ended since v_low
END;
$$;

COMMENT ON FUNCTION pgq._sweep_leases(jsonb, text[], timestamptz) IS
    'Reserve stage 1: expired leases of these queues come back to waiting, recorded as lease_expired (S14; given back for SQL handlers, S35); returns the cursor.';

-- pgq._pickup_rows: the rows of p_pick that a pickup check or admission applies to
-- (pgq._pickup_checks), with their places in the pick and whether a check other than
-- admission applies, in pick order, read by one TID scan. Its own function, for its
-- planner settings: the functions a pickup check calls plan their statements under the
-- settings of their caller, and with nested loops turned off as well as hash and merge
-- joins, every join of theirs would be planned at a cost that turns JIT on.
CREATE OR REPLACE FUNCTION pgq._pickup_rows(p_pick pgq.picked, p_now timestamptz, p_default_tries int,
                                            OUT jobs pgq.jobs[], OUT ords int[], OUT checked boolean[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_mergejoin = off  -- by TID only (S78)
SET enable_nestloop = off SET enable_hashjoin = on  -- the rows matched to their places in the pick in a hash
SET plan_cache_mode = force_generic_plan  -- a custom plan costs more than the rest of a reserve
AS $$
BEGIN
    SELECT array_agg(x.job), array_agg(x.ord), array_agg(x.checked) INTO jobs, ords, checked
    FROM (SELECT j AS job, p.ord::int AS ord, c.checked
          FROM pgq.jobs j
          JOIN unnest(p_pick.tids) WITH ORDINALITY p(tid, ord) ON j.ctid = p.tid
          CROSS JOIN LATERAL (
              SELECT (j.cancel_requested_at IS NOT NULL OR j.batch_id IS NOT NULL OR j.debounce_key IS NOT NULL
                      OR j.unique_until = 'processing'
                      OR (j.retry_until IS NOT NULL AND p_now > j.retry_until)
                      OR (j.retry_until IS NULL AND coalesce(j.tries, p_default_tries) > 0
                          AND j.attempts + 1 > coalesce(j.tries, p_default_tries))) IS TRUE AS checked
          ) c
          WHERE j.slot = p_pick.slot AND j.ctid = ANY (p_pick.tids) AND (j.middleware IS NOT NULL OR c.checked)
          ORDER BY p.ord) x;  -- the aggregates keep this order
END;
$$;

COMMENT ON FUNCTION pgq._pickup_rows(pgq.picked, timestamptz, int) IS
    'Reserve: the picked rows a pickup check or admission applies to, in pick order, by one TID scan (S78).';

-- pgq._pickup_checks: stage 3 of pgq.reserve, for rows p_pick picked: each job is
-- checked as its pickup would make it (attempt counted, leased to p_worker with the
-- token built on p_base: pgq._as_reserved), in pick order, and ends here, without its
-- handler running, when
--   * an operator cancelled it while its worker was gone (pgq.cancel, S40), or its
--     batch was cancelled after it was left waiting (S74): cancelled;
--   * it is debounced and its token is no longer its key's current one (S24): deleted,
--     recorded as debounced, and a job_debounced event is sent;
--   * its attempts now exceed its tries (p_default_tries when it set none; 0 =
--     unlimited) or its deadline has passed (S12): failed for good with
--     MaxAttemptsExceeded (its until-processing lock goes too, S23).
-- A job with middleware goes on to admission; any other is handed over (S23). Reads
-- only the batch's rows that need any of this, by one TID scan (never a plain one:
-- pgq.reserve takes a pick of plain jobs without this stage). A job that ends here can
-- end others of the pick (a member failed for good cancels its batch's waiting
-- members, S74): those, ended and recorded already, are dropped from the batch.
-- Returns the batch.
CREATE OR REPLACE FUNCTION pgq._pickup_checks(
    p_pick pgq.picked, p_base text, p_now timestamptz, p_lease int, p_worker text, p_default_tries int
) RETURNS pgq.reserve_batch
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan  -- a custom plan costs more than the rest of a reserve
AS $$
DECLARE
    v_n     int := cardinality(p_pick.tids);
    v_b     pgq.reserve_batch;
    v_tids  tid[] := p_pick.tids;         -- local arrays: see pgq._admission
    v_tokens uuid[] := pgq._lease_tokens(p_base, array_fill(p_pick.slot, ARRAY[v_n]), p_pick.ids);
    v_rep   pgq.reservation[] := '{}';
    v_rep_places int[] := '{}';
    v_jobs  pgq.jobs[];                   -- the rows read, as reserved, with their places,
    v_ords  int[];
    v_checked boolean[];                  -- and whether a check other than admission applies
    v_admit pgq.jobs[] := '{}';           -- to admission, with their places
    v_admit_ords int[] := '{}';
    v_job   pgq.jobs;
    v_why   text;
    v_ended boolean := false;             -- a batch member failed for good here: others of the pick may have ended
BEGIN
    v_b.slot := p_pick.slot;
    v_b.tokens := v_tokens;
    SELECT r.jobs, r.ords, r.checked INTO v_jobs, v_ords, v_checked FROM pgq._pickup_rows(p_pick, p_now, p_default_tries) r;
    v_jobs := pgq._as_reserved(v_jobs, v_ords, v_tokens, p_now, p_lease, p_worker);
    FOR i IN 1 .. coalesce(cardinality(v_jobs), 0) LOOP
        IF v_ended AND NOT pgq._still_waiting(p_pick.slot, v_tids[v_ords[i]]) THEN
            v_tids[v_ords[i]] := NULL;
            CONTINUE;
        END IF;
        IF NOT v_checked[i] THEN  -- middleware only: straight to admission
            v_admit := v_admit || v_jobs[i];
            v_admit_ords := v_admit_ords || v_ords[i];
            CONTINUE;
        END IF;
        v_job := v_jobs[i];
        IF v_job.cancel_requested_at IS NULL AND v_job.batch_id IS NOT NULL
           AND EXISTS (SELECT FROM pgq.job_batches b WHERE b.id = v_job.batch_id AND b.cancelled_at IS NOT NULL) THEN
            v_job.cancel_requested_at := p_now;
            v_job.cancel_requested_by := format('the cancel of batch %s', v_job.batch_id);
        END IF;
        IF v_job.cancel_requested_at IS NOT NULL THEN
            v_why := 'cancelled by ' || v_job.cancel_requested_by;
            PERFORM pgq._cancel(v_job, p_now, false);
            v_rep := v_rep || pgq._reported(v_job, 'cancelled', v_why);
        ELSIF v_job.debounce_key IS NOT NULL AND NOT EXISTS (
            SELECT FROM pgq.debounce_tokens d WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token
        ) THEN
            v_why := 'superseded by a newer dispatch of ' || v_job.debounce_key;
            PERFORM pgq._record(v_job, 'debounced', p_now, v_why, p_started => false);
            DELETE FROM pgq.jobs j WHERE j.uuid = v_job.uuid;
            PERFORM pgq._record_ends('cancelled', ARRAY[v_job.uuid], ARRAY[v_job.batch_id], ARRAY[v_job.chain_id],
                                     ARRAY[v_job.chain_step], v_why);  -- ended without running (S74)
            -- No key in the event: keys come from payloads, and any role may LISTEN.
            PERFORM pg_notify('pgq_events', json_build_object(
                'event', 'job_debounced', 'uuid', v_job.uuid, 'job', v_job.job, 'queue', v_job.queue)::text);
            v_rep := v_rep || pgq._reported(v_job, 'debounced', v_why);
        ELSIF (v_job.retry_until IS NOT NULL AND p_now > v_job.retry_until)
              OR (v_job.retry_until IS NULL AND coalesce(v_job.tries, p_default_tries) > 0
                  AND v_job.attempts > coalesce(v_job.tries, p_default_tries)) THEN
            v_why := pgq._exhausted_message(v_job, p_now);
            PERFORM pgq._record(v_job, 'exhausted', p_now, v_why, p_final => true, p_started => false);
            PERFORM pgq._bury(v_job, v_why, p_now);
            v_rep := v_rep || pgq._reported(v_job, 'exhausted', v_why);
            v_ended := v_ended OR v_job.batch_id IS NOT NULL;  -- only a batch member's failure ends others
        ELSIF v_job.middleware IS NOT NULL THEN
            v_admit := v_admit || v_job;
            v_admit_ords := v_admit_ords || v_ords[i];
            CONTINUE;
        ELSE
            PERFORM pgq._handing_over(v_job);
            CONTINUE;
        END IF;
        v_rep_places := v_rep_places || v_ords[i];
        v_tids[v_ords[i]] := NULL;
    END LOOP;
    IF v_ended THEN  -- those sent to admission before an end that ended them too
        SELECT coalesce(array_agg(v_admit[a.n] ORDER BY a.n), '{}'), coalesce(array_agg(a.o ORDER BY a.n), '{}')
        INTO v_admit, v_admit_ords
        FROM unnest(v_admit_ords) WITH ORDINALITY a(o, n)
        WHERE pgq._still_waiting(p_pick.slot, v_tids[a.o]);
    END IF;
    v_b.tids := v_tids;
    v_b.held := array_fill(NULL::text, ARRAY[v_n]);
    v_b.expire := array_fill(NULL::int, ARRAY[v_n]);
    v_b.admit := v_admit;
    v_b.admit_ords := v_admit_ords;
    v_b.reports := v_rep;
    v_b.report_places := v_rep_places;
    v_b.turned := '{}';
    v_b.busy := false;
    RETURN v_b;
END;
$$;

COMMENT ON FUNCTION pgq._pickup_checks(pgq.picked, text, timestamptz, int, text, int) IS
    'Reserve stage 3: picked jobs that must not run end before their handler (cancelled S40 S74, debounced S24, exhausted S12); returns the batch for admission.';

-- pgq.reserve: reserves up to max jobs for a worker, taking the queues in the order given
-- (S30) and, within a queue, by priority then FIFO, with FOR UPDATE SKIP LOCKED, through
-- the stages above. A paused queue is passed over (S41). Returns the jobs whose handler
-- may run, each with a fresh lease_token and its attempt counted (S5), and
-- overlap_expire_after (how long the worker must renew its overlap leases, when each
-- key it took has an expire_after, S34); and, with pickup set, not to be run, the jobs
-- cancelled, debounced, exhausted, turned away or failed by middleware in this call, so
-- the worker can log every outcome. Jobs turned away in this call are not picked again
-- by it, and a busy rate-limit window ends its queue's turn (S82), as does passing over
-- v_pass jobs it could not run (S122).
-- State change: waiting -> reserved; reserved (lease ended) -> waiting -> reserved;
-- waiting -> failed (exhausted) | cancelled | deleted (debounced, dont_release) |
-- waiting (turned away).
CREATE OR REPLACE FUNCTION pgq.reserve(
    worker        text,
    queues        text[],
    max           int,
    default_tries int DEFAULT 1,
    as_of         timestamptz DEFAULT NULL,
    call          uuid DEFAULT NULL
) RETURNS SETOF pgq.reservation
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now    timestamptz := coalesce(reserve.as_of, now());
    v_base   text := pgq._lease_base(reserve.call);  -- of this call's lease tokens
    v_cursor jsonb;                                  -- where the walk of each queue starts (S77)
    v_left   int := reserve.max;
    v_queue  text;
    v_lease  int;
    v_paused boolean;
    v_fair   boolean;                                -- round-robin across keys (S114)
    v_skip   bigint[];
    v_pick   pgq.picked;
    v_batch  pgq.reserve_batch;
    v_reports pgq.reservation[];
    v_places int[];
    v_taken  int;
    v_pass   int := greatest(reserve.max, 1000);  -- the most jobs a queue's turn passes over (S122)
BEGIN
    IF reserve.max IS NULL OR reserve.max < 1 THEN
        RAISE EXCEPTION 'pgq: reserve max must be >= 1, got %', reserve.max USING ERRCODE = '22023';
    END IF;
    IF reserve.default_tries IS NULL OR reserve.default_tries < 0 THEN
        RAISE EXCEPTION 'pgq: default_tries must be >= 0, got %', reserve.default_tries USING ERRCODE = '22023';
    END IF;
    -- The settings its stages hand each other start empty: a caller cannot give them values.
    PERFORM set_config('pgq.fair_pending', '', true), set_config('pgq.fair_back', '', true),
            set_config('pgq.fair_rest', '', true), set_config('pgq.concurrency_waits', '', true);
    v_cursor := pgq._sweep_leases(pgq._pick_begin(reserve.queues), reserve.queues, v_now);
    FOREACH v_queue IN ARRAY reserve.queues LOOP
        EXIT WHEN v_left <= 0;
        SELECT q.retry_after, q.paused, q.fair_by IS NOT NULL INTO v_lease, v_paused, v_fair FROM pgq.queues q WHERE q.name = v_queue;
        CONTINUE WHEN v_paused;
        v_lease := coalesce(v_lease, pgq._default_retry_after());
        v_skip := '{}';
        LOOP
            v_pick := CASE WHEN v_fair THEN pgq._pick_fair(v_cursor, v_queue, v_left, v_now, v_skip)
                           ELSE pgq._pick(v_cursor, v_queue, v_left, v_now, v_skip) END;
            IF (v_pick.chunk).first_id IS NOT NULL THEN
                RETURN QUERY SELECT * FROM pgq._take_chunk(v_pick.chunk, v_left, v_now, v_lease, reserve.worker, v_base);
                GET DIAGNOSTICS v_taken = ROW_COUNT;
                v_left := v_left - v_taken;
                EXIT WHEN v_left <= 0;
                CONTINUE;
            END IF;
            EXIT WHEN coalesce(cardinality(v_pick.tids), 0) = 0;
            IF false <> ALL (v_pick.plain) THEN
                -- Plain jobs only, as a chunk's: no pickup check or admission applies.
                RETURN QUERY
                SELECT (t.reserved).*
                FROM pgq._take_rows(v_pick.slot, v_pick.tids,
                                    pgq._lease_tokens(v_base, array_fill(v_pick.slot, ARRAY[cardinality(v_pick.ids)]), v_pick.ids),
                                    NULL, NULL, v_now, v_lease, reserve.worker) t;
                GET DIAGNOSTICS v_taken = ROW_COUNT;
                v_left := v_left - v_taken;
                EXIT WHEN v_pick.last OR v_left <= 0;
                CONTINUE;
            END IF;
            v_batch := pgq._admission(pgq._pickup_checks(v_pick, v_base, v_now, v_lease, reserve.worker, reserve.default_tries),
                                      v_now, reserve.worker);
            -- Taken and reported, in pick order.
            v_reports := v_batch.reports;
            v_places := v_batch.report_places;
            RETURN QUERY
            SELECT (x.r).* FROM (
                SELECT t.place, t.reserved AS r
                FROM pgq._take_rows(v_batch.slot, v_batch.tids, v_batch.tokens, v_batch.held, v_batch.expire,
                                    v_now, v_lease, reserve.worker) t
                UNION ALL
                SELECT v_places[i], v_reports[i] FROM generate_subscripts(v_reports, 1) i
            ) x
            ORDER BY x.place;
            GET DIAGNOSTICS v_taken = ROW_COUNT;
            v_left := v_left - (v_taken - cardinality(v_reports));
            v_skip := v_skip || v_batch.turned;
            EXIT WHEN v_batch.busy OR v_pick.last OR v_left <= 0 OR cardinality(v_skip) >= v_pass;
        END LOOP;
        v_cursor := pgq._pick_done(v_cursor, v_queue);
    END LOOP;
    v_cursor := pgq._pick_end(v_cursor);
    IF current_setting('pgq.concurrency_waits', true) <> '' THEN  -- jobs left waiting (stage 7)
        PERFORM pgq._concurrency_waits(v_now);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq.reserve(text, text[], int, int, timestamptz, uuid) IS
    'Worker protocol: sweeps expired leases, reserves up to max jobs from the queues in order (SKIP LOCKED), applies the pickup checks (cancel, debounce, S12, middleware); returns runnable jobs with fresh lease tokens, and the others with pickup set.';

-- pgq.unreserve: gives back, not counted, every job still reserved by the reserve call
-- identified by call (pgq.reserve's call argument, a random uuid the worker chose), and
-- returns how many. A worker calls it when a reserve failed in a way that may have
-- committed (the connection or the server went away before the answer arrived): it
-- never learnt those jobs, so their handlers never ran (S35). Each is recorded as
-- interrupted. State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq.unreserve(call uuid, as_of timestamptz DEFAULT NULL) RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now   timestamptz := coalesce(unreserve.as_of, now());
    v_range record := pgq._lease_call_range(unreserve.call);
    v_job   pgq.jobs;
    v_count int := 0;
BEGIN
    IF unreserve.call IS NULL THEN
        RAISE EXCEPTION 'pgq: unreserve needs the call uuid given to pgq.reserve' USING ERRCODE = '22023';
    END IF;
    FOR v_job IN
        SELECT * FROM pgq.jobs j
        WHERE j.reserved_until IS NOT NULL
          AND j.lease_token BETWEEN v_range.lo AND v_range.hi
        FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM pgq._give_back(v_job, 'the answer of its reserve call was lost: the worker never ran it', v_now, false);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION pgq.unreserve(uuid, timestamptz) IS
    'Worker protocol: gives back, not counted, the jobs still reserved by a reserve call whose answer the worker lost (S35); returns how many.';

-- pgq.wake: the session stops napping: it releases the nap locks pgq.nap took (listed in
-- the session setting pgq.napping). Dispatches no longer notify for it.
CREATE OR REPLACE FUNCTION pgq.wake() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY coalesce(nullif(current_setting('pgq.napping', true), ''), '{}')::text[] LOOP
        PERFORM pg_advisory_unlock_shared(pgq._lock_space('nap'), hashtext(q));
    END LOOP;
    PERFORM set_config('pgq.napping', '', false);
END;
$$;

COMMENT ON FUNCTION pgq.wake() IS
    'Worker protocol: the session stops napping (see pgq.nap); dispatches stop notifying for it.';

-- pgq.nap: a worker's session that found no job naps on queues: from now on every
-- dispatch to them sends a pgq_jobs NOTIFY on commit, until pgq.wake. Then it waits up
-- to wait for the dispatches already under way, which may have seen no napper, to end.
-- true: none is left, and the worker must reserve once more before it sleeps (their jobs
-- are visible now). false: one was still open after wait; the session naps anyway, and
-- the worker calls pgq.nap again later. Call it outside a transaction block, on the
-- worker's reserving session (the nap locks belong to the session); a second call
-- replaces the first. If the call fails, close the session: its nap locks may be left.
CREATE OR REPLACE FUNCTION pgq.nap(queues text[], wait interval DEFAULT '10 milliseconds') RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q         text;
    v_ok      boolean := true;
    v_napping text[] := '{}';
    v_timeout text := current_setting('lock_timeout');
BEGIN
    IF queues IS NULL OR cardinality(queues) = 0 OR array_position(queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: nap needs at least one queue, got %', queues USING ERRCODE = '22023';
    END IF;
    IF wait IS NULL OR wait < interval '1 millisecond' THEN
        RAISE EXCEPTION 'pgq: nap wait must be at least 1 millisecond, got %', wait USING ERRCODE = '22023';
    END IF;
    PERFORM pgq.wake();
    PERFORM set_config('lock_timeout', ceil(extract(epoch FROM wait) * 1000)::bigint || 'ms', true);
    FOREACH q IN ARRAY queues LOOP
        BEGIN
            -- Waits only while a dispatch tests the lock, an instant.
            PERFORM pg_advisory_lock_shared(pgq._lock_space('nap'), hashtext(q));
            v_napping := array_append(v_napping, q);
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END LOOP;
    -- Outside any block that can roll back: pgq.wake must find every lock taken.
    PERFORM set_config('pgq.napping', v_napping::text, false);
    IF v_ok THEN
        BEGIN
            FOREACH q IN ARRAY queues LOOP
                PERFORM pg_advisory_xact_lock(pgq._lock_space('dispatching'), hashtext(q));
            END LOOP;
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END IF;
    PERFORM set_config('lock_timeout', v_timeout, true);
    RETURN v_ok;
END;
$$;

COMMENT ON FUNCTION pgq.nap(text[], interval) IS
    'Worker protocol: the session naps on queues (dispatches to them notify until pgq.wake) and waits up to wait for dispatches under way; true: reserve once more, then sleep.';
