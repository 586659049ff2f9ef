-- Writing an attempt's outcome: history rows (S19), fencing (S15), failing for good (S17), turn-aways.

-- pgq._as_reserved: picked jobs as their pickup makes them: each one's attempt counted
-- (S5), leased to p_worker from p_now for p_lease seconds with the token at its place
-- in p_tokens (p_places: each job's place in the pick; S14, S15), started. A reserve's
-- stages record and end a picked job in this form before (or instead of) reserving its
-- row, so its history says which attempt and lease it was. One call for a batch: each
-- call of a function that pins its search_path sets and restores it, which costs more
-- than this function's work for one job.
CREATE OR REPLACE FUNCTION pgq._as_reserved(p_jobs pgq.jobs[], p_places int[], p_tokens uuid[],
                                            p_now timestamptz, p_lease int, p_worker text)
RETURNS pgq.jobs[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_until timestamptz := p_now + make_interval(secs => p_lease);
    v_out   pgq.jobs[] := '{}';
    v_job   pgq.jobs;
    i       int := 0;
BEGIN
    FOREACH v_job IN ARRAY coalesce(p_jobs, '{}') LOOP
        i := i + 1;
        v_job.attempts := v_job.attempts + 1;
        v_job.reserved_at := p_now;
        v_job.reserved_until := v_until;
        v_job.reserved_by := p_worker;
        v_job.lease_token := p_tokens[p_places[i]];
        v_job.started_at := p_now;
        v_out := v_out || v_job;
    END LOOP;
    RETURN v_out;
END;
$$;

COMMENT ON FUNCTION pgq._as_reserved(pgq.jobs[], int[], uuid[], timestamptz, int, text) IS
    'Picked jobs as their reservation makes them (attempt counted, leased), for the reserve''s stages to record.';

-- pgq._record: appends one attempt row for a job as it is now (S19), with its
-- exception's DETAIL and HINT when it had them (S88).
CREATE OR REPLACE FUNCTION pgq._record(
    p_job pgq.jobs, p_outcome text, p_now timestamptz,
    p_exception text DEFAULT NULL, p_delay int DEFAULT NULL, p_final boolean DEFAULT false,
    p_started boolean DEFAULT true, p_detail text DEFAULT NULL, p_hint text DEFAULT NULL
) RETURNS pgq.attempts
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row pgq.attempts;
BEGIN
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at,
         finished_at, outcome, exception, delay, final, exception_detail, exception_hint)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, CASE WHEN p_started THEN p_job.started_at END, p_now, p_outcome,
            p_exception, p_delay, p_final, nullif(p_detail, ''), nullif(p_hint, ''))
    RETURNING * INTO v_row;  -- plan kept (see pgq.dispatch)
    RETURN v_row;
END;
$$;

COMMENT ON FUNCTION pgq._record(pgq.jobs, text, timestamptz, text, int, boolean, boolean, text, text) IS 'Appends one attempt row for a job as it is now (S19), with its exception''s DETAIL and HINT (S88).';

-- pgq._record_ends: jobs that carry a batch or a chain ended, all the same way:
-- 'succeeded', 'failed' (for good) or 'cancelled' (with p_exception saying why). Arrays
-- run in parallel, one entry per job; jobs with neither are skipped. The rows written
-- to pgq.job_ends are how the workflows learn of it (their trigger there moves chains
-- and counts batches, S70-S76), in this transaction: the core never calls them.
CREATE OR REPLACE FUNCTION pgq._record_ends(
    p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps int[], p_exception text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, chain_id, chain_step)
    SELECT e.uuid, p_outcome, p_exception, e.batch, e.chain, e.step
    FROM unnest(p_uuids, p_batches, p_chains, p_steps) WITH ORDINALITY AS e(uuid, batch, chain, step, n)
    WHERE e.batch IS NOT NULL OR e.chain IS NOT NULL
    ORDER BY e.n;
END;
$$;

COMMENT ON FUNCTION pgq._record_ends(text, uuid[], uuid[], uuid[], int[], text) IS
    'Records that jobs of chains or batches ended (pgq.job_ends), which moves their chains and batches in this transaction (S70-S76).';

-- pgq._reject: records calls made with a lease token that no longer holds its job (S15)
-- on the attempt that token belonged to.
CREATE OR REPLACE FUNCTION pgq._reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamptz) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE pgq.attempts a
    SET rejected_calls = array_append(a.rejected_calls, format('%s rejected at %s: lease lost', p_call, p_now))
    FROM unnest(p_uuids, p_tokens) AS t(uuid, token)
    WHERE a.job_uuid = t.uuid
      AND a.lease_token = t.token;
$$;

COMMENT ON FUNCTION pgq._reject(text, uuid[], uuid[], timestamptz) IS 'Records calls made with lease tokens that lost their jobs on their attempts (S15).';

-- pgq._held: the job this lease token holds, locked, or NULL after recording the
-- rejected call (S15).
CREATE OR REPLACE FUNCTION pgq._held(p_call text, p_uuid uuid, p_token uuid, p_now timestamptz) RETURNS pgq.jobs
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job pgq.jobs;
BEGIN
    SELECT * INTO v_job FROM pgq.jobs j
    WHERE j.slot = pgq._token_slot(p_token) AND j.uuid = p_uuid AND j.lease_token = p_token  -- one slot (S80)
    FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM pgq._reject(p_call, ARRAY[p_uuid], ARRAY[p_token], p_now);
        RETURN NULL;
    END IF;
    RETURN v_job;
END;
$$;

COMMENT ON FUNCTION pgq._held(text, uuid, uuid, timestamptz) IS 'The job a lease token holds, locked; NULL (and the call recorded as rejected) when it holds none (S15).';

-- pgq._exhausted_message: the S12 failure text for a job picked up after its last
-- attempt or deadline, with the last real exception and the lease expiries, so the
-- failed job says why it ran out.
CREATE OR REPLACE FUNCTION pgq._exhausted_message(p_job pgq.jobs, p_now timestamptz) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
    WITH turned AS (
        SELECT coalesce(sum(t.value::int), 0) AS total,
               string_agg(format('%s× by %s', t.value, t.key), ', ' ORDER BY t.key) AS detail
        FROM jsonb_each_text(p_job.turn_aways) t
    )
    SELECT format('MaxAttemptsExceeded: %s %s', p_job.job,
                  CASE WHEN p_job.retry_until IS NOT NULL AND p_now > p_job.retry_until
                       THEN format('passed its retry deadline %s after %s attempts', p_job.retry_until, p_job.attempts - 1)
                       ELSE format('attempted %s times', p_job.attempts - 1) END)
        || CASE WHEN p_job.last_exception IS NOT NULL
                THEN format('; last exception (attempt %s): %s', p_job.last_exception_attempt, p_job.last_exception)
                WHEN turned.total > 0 AND turned.total = p_job.attempts - 1 THEN '; handler never ran'
                WHEN p_job.attempts > 1 THEN '; handler never raised an exception'
                ELSE '' END
        || CASE WHEN turned.total > 0 THEN
                    CASE WHEN p_job.last_exception IS NULL AND turned.total = p_job.attempts - 1 THEN ': ' ELSE '; ' END
                    || 'turned away ' || turned.detail
                ELSE '' END
        || CASE WHEN p_job.lease_expiries > 0
                THEN format('; %s× lease expired (worker died or froze mid-job%s)', p_job.lease_expiries,
                            CASE WHEN p_job.handler IS NULL
                                 THEN '; a Go handler''s outcome is then unknown, so the attempt counts' ELSE '' END)
                ELSE '' END
        || CASE WHEN p_job.interruptions > 0
                THEN format('; %s× interrupted by infrastructure and given back', p_job.interruptions)
                ELSE '' END
    FROM turned);
END;
$$;

COMMENT ON FUNCTION pgq._exhausted_message(pgq.jobs, timestamptz) IS 'The MaxAttemptsExceeded text of a job exhausted at pickup, with its last exception, turn-aways and lease expiries (S12).';

-- pgq._bury: the job fails for good (S17): it leaves pgq.jobs, a pgq.failed_jobs row is
-- written (with the exception's DETAIL and HINT, S88) and a job_failed event is sent on
-- commit; its chain stops and its batch counts the failure (S71, S75).
-- State change: reserved -> failed.
CREATE OR REPLACE FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamptz,
                                     p_detail text DEFAULT NULL, p_hint text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
    PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],  -- S21: released when it fails for good
                               ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
    INSERT INTO pgq.failed_jobs
        (uuid, queue, payload, exception, failed_at, job, attempts, priority, handler, tries, backoff,
         max_exceptions, timeout, fail_on_timeout, retry_until, unique_key, unique_token, unique_until,
         debounce_key, debounce_token, middleware, dispatched_at, batch_id, chain_id, chain_step,
         exception_detail, exception_hint)
    VALUES (p_job.uuid, p_job.queue, p_job.payload, p_exception, p_now, p_job.job, p_job.attempts,
            p_job.priority, p_job.handler, p_job.tries, p_job.backoff, p_job.max_exceptions, p_job.timeout,
            p_job.fail_on_timeout, p_job.retry_until, p_job.unique_key, p_job.unique_token, p_job.unique_until,
            p_job.debounce_key, p_job.debounce_token, p_job.middleware, p_job.created_at,
            p_job.batch_id, p_job.chain_id, p_job.chain_step, nullif(p_detail, ''), nullif(p_hint, ''))
    ON CONFLICT (uuid) DO UPDATE
        SET queue = EXCLUDED.queue, payload = EXCLUDED.payload, exception = EXCLUDED.exception,
            failed_at = EXCLUDED.failed_at, attempts = EXCLUDED.attempts,
            exception_detail = EXCLUDED.exception_detail, exception_hint = EXCLUDED.exception_hint;
    IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN
        -- its chain stops and on_failure is queued; its batch counts a failure (S71, S75)
        PERFORM pgq._record_ends('failed', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                 ARRAY[p_job.chain_step], p_exception);
    END IF;
    PERFORM pg_notify('pgq_events', json_build_object(
        'event', 'job_failed', 'uuid', p_job.uuid, 'job', p_job.job, 'queue', p_job.queue)::text);
END;
$$;

COMMENT ON FUNCTION pgq._bury(pgq.jobs, text, timestamptz, text, text) IS 'Fails a job for good: pgq.failed_jobs row (with the exception''s DETAIL and HINT, S88), locks released, job_failed event (S17).';

-- pgq._turn_away: a middleware sent the job back before its handler ran: the attempt is
-- recorded as turned_away with the middleware's name and counted (S5: p_job is the job
-- as its pickup made it), and the job waits delay seconds (no exception, no backoff),
-- or with dont_release is deleted without a failure (S27).
CREATE OR REPLACE FUNCTION pgq._turn_away(
    p_job pgq.jobs, p_middleware text, p_note text, p_delay int, p_drop boolean, p_now timestamptz
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome,
         middleware, exception, delay)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, NULL, p_now, 'turned_away', p_middleware, p_note,
            CASE WHEN NOT p_drop THEN p_delay END);
    IF p_drop THEN
        DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
        PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],
                                   ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
        IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN  -- ended without running (S74)
            PERFORM pgq._record_ends('cancelled', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                     ARRAY[p_job.chain_step], 'dropped by ' || p_middleware || ': ' || p_note);
        END IF;
        RETURN;
    END IF;
    UPDATE pgq.jobs j
    SET attempts = p_job.attempts, available_at = p_now + make_interval(secs => p_delay), wait_reason = 'turned_away',
        waits_on = NULL,  -- it waits for its delay, not for a place: no end of a key wakes it (S99)
        turn_aways = jsonb_set(j.turn_aways, ARRAY[p_middleware], to_jsonb(coalesce((j.turn_aways ->> p_middleware)::int, 0) + 1)),
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.uuid = p_job.uuid;
END;
$$;

COMMENT ON FUNCTION pgq._turn_away(pgq.jobs, text, text, int, boolean, timestamptz) IS 'Records a turn-away and sends the job back to wait, or deletes it with dont_release (S27).';

-- pgq._give_back: an attempt that infrastructure interrupted goes back to wait, available
-- at once and recorded as interrupted with p_reason (S35). Its attempt is given back,
-- except that with p_limited only pgq._max_give_backs() attempts of one job are: past
-- that the interruption counts, so a handler that brings down its own connection cannot
-- run forever. Returns the attempt recorded. State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq._give_back(p_job pgq.jobs, p_reason text, p_now timestamptz, p_limited boolean)
RETURNS pgq.attempts
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_refund boolean := NOT p_limited OR p_job.interruptions < pgq._max_give_backs();
    v_attempt pgq.attempts;
BEGIN
    v_attempt := pgq._record(p_job, 'interrupted', p_now,
        p_reason || CASE WHEN v_refund THEN '; attempt given back'
                         ELSE format('; counted: %s attempts were given back already', p_job.interruptions) END,
        0);
    PERFORM pgq._release_overlap(ARRAY[p_job.uuid], p_job.overlap_keys);
    UPDATE pgq.jobs j
    SET attempts = j.attempts - CASE WHEN v_refund THEN 1 ELSE 0 END,
        interruptions = j.interruptions + CASE WHEN v_refund AND p_limited THEN 1 ELSE 0 END,
        available_at = p_now, wait_reason = 'interrupted',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = p_job.uuid;
    RETURN v_attempt;
END;
$$;

COMMENT ON FUNCTION pgq._give_back(pgq.jobs, text, timestamptz, boolean) IS 'Sends an interrupted attempt back to wait, recorded as interrupted and given back (up to pgq._max_give_backs() times when limited, S35).';

-- pgq._cancel: the job ends as cancelled: it leaves pgq.jobs, its locks and tokens go,
-- and its attempt is recorded as cancelled (started when p_started: its handler ran).
-- Not a failure: nothing is written to pgq.failed_jobs, and nothing retries it.
-- State change: waiting | reserved -> cancelled.
CREATE OR REPLACE FUNCTION pgq._cancel(p_job pgq.jobs, p_now timestamptz, p_started boolean) RETURNS pgq.attempts
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
    PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],
                               ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
    PERFORM pgq._release_overlap(ARRAY[p_job.uuid], p_job.overlap_keys);
    IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN  -- its chain stops; its batch counts it (S74)
        PERFORM pgq._record_ends('cancelled', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                 ARRAY[p_job.chain_step], 'cancelled by ' || coalesce(p_job.cancel_requested_by, session_user));
    END IF;
    RETURN pgq._record(p_job, 'cancelled', p_now,
                       'cancelled by ' || coalesce(p_job.cancel_requested_by, session_user), p_started => p_started);
END;
$$;

COMMENT ON FUNCTION pgq._cancel(pgq.jobs, timestamptz, boolean) IS 'Ends a job as cancelled: deleted with its locks, the attempt recorded as cancelled; not a failure.';

-- pgq._release_overlap: ends the overlap leases that these jobs hold on these keys (the
-- keys of their attempts, jobs.overlap_keys). A lease another job took over after one of
-- theirs expired stays. For each place of a concurrency_limited key freed ('#' key '#'
-- i), the key's first job waiting for it is made ready and its queue's workers woken
-- (S99, pgq._wake_waiting), under the key's wake lock held shared from before the
-- lease ends: a reserve that leaves the key's jobs waiting holds it alone from its last
-- stage to its commit (pgq._concurrency_waits), so the wake sees them. No-op when
-- p_keys is NULL.
CREATE OR REPLACE FUNCTION pgq._release_overlap(p_uuids uuid[], p_keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- see pgq._admit
AS $$
DECLARE
    v_freed text[];
    v_n     bigint[];
BEGIN
    -- Shared: ends never wait for each other. Only a reserve's last stage takes it
    -- alone, and waits for nothing after, so an end waits for it in no cycle.
    PERFORM pg_advisory_xact_lock_shared(l.id)
    FROM (SELECT DISTINCT unnest(pgq._concurrency_lock_ids('wake',
              ARRAY(SELECT regexp_replace(substr(k, 2), '#[0-9]+$', '') FROM unnest(p_keys) k WHERE k LIKE '#%'))) AS id) l
    ORDER BY l.id;
    -- The keys as one index scan of each generation, and the uuids as a hashed
    -- semi-join, not "= ANY", which would test each lease found against every uuid of a
    -- completion batch (a join with unnest(p_keys) gets a generic plan that does too).
    WITH gone AS (
        DELETE FROM pgq.overlap_locks o
        WHERE o.key = ANY (p_keys) AND o.job_uuid IN (SELECT u FROM unnest(p_uuids) u)
        RETURNING o.key
    )
    SELECT array_agg(f.key), array_agg(f.n) INTO v_freed, v_n
    FROM (SELECT regexp_replace(substr(g.key, 2), '#[0-9]+$', '') AS key, count(*) AS n
          FROM gone g WHERE g.key LIKE '#%'
          GROUP BY 1) f;
    IF v_freed IS NOT NULL THEN
        PERFORM pgq._wake_waiting(v_freed, v_n);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._release_overlap(uuid[], text[]) IS 'Ends the overlap leases these jobs hold on these keys; a lease taken over by another job stays (S26, S34); wakes a job waiting for each concurrency_limited place freed (S99).';

-- pgq._wake_waiting: for each concurrency_limited key of p_keys, its first p_counts
-- jobs waiting for a place (jobs.waits_on) are made ready, and their queues' workers
-- woken (S99). A waiting job that another transaction has locked (another end waking
-- it) is passed over for the next, so two wakers never wait for each other over the
-- jobs they wake. A woken job runs only if its key has room when a reserve takes it;
-- else it waits again.
CREATE OR REPLACE FUNCTION pgq._wake_waiting(p_keys text[], p_counts bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- see pgq._admit
AS $$
DECLARE
    v_queue text;
BEGIN
    FOR v_queue IN
        WITH woken AS (
            UPDATE pgq.jobs j SET available_at = now(), waits_on = NULL
            FROM unnest(p_keys, p_counts) f(key, n),
                 LATERAL (SELECT w.uuid FROM pgq.jobs w
                          WHERE w.waits_on = f.key AND w.reserved_at IS NULL AND w.available_at > now()
                          ORDER BY w.id LIMIT f.n
                          FOR UPDATE SKIP LOCKED) w
            WHERE j.uuid = w.uuid
            RETURNING j.queue
        )
        SELECT DISTINCT queue FROM woken
    LOOP
        PERFORM pgq._notify(v_queue);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._wake_waiting(text[], bigint[]) IS 'Makes ready, per concurrency_limited key, its first waiting jobs that no other transaction has locked, and wakes their queues (S99).';
