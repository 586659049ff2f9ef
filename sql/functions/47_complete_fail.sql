-- Reporting an attempt: complete, fail (S5-S10, S13, S17), release (S11, S32), heartbeat (S14), SQL handlers.

-- pgq._clear_circuits: a success clears the count of its throttles_exceptions circuit
-- (S29), for jobs with a breaker: their names, breakers and payloads. The keys are
-- computed only for those jobs: the call costs more than the rest of a completion.
CREATE OR REPLACE FUNCTION pgq._clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]) RETURNS void
LANGUAGE plpgsql VOLATILE  -- (plpgsql: its statement's plan is kept across calls; a SQL function's is not)
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, as pgq.complete
AS $$
BEGIN
    DELETE FROM pgq.circuits c
    WHERE c.key = ANY (pgq._middleware_keys(p_jobs, array_fill('throttles_exceptions'::text, ARRAY[cardinality(p_breakers)]),
                                            p_breakers, p_payloads));
END;
$$;

COMMENT ON FUNCTION pgq._clear_circuits(text[], jsonb[], jsonb[]) IS 'Clears the throttles_exceptions circuits of jobs that succeeded (S29).';

-- pgq.complete: the attempts of these jobs succeeded. Each job is deleted only when its
-- lease token still holds it; the attempt is recorded as succeeded. Calls whose token lost
-- its lease are rejected and recorded on that token's attempt (S15). A unique lock (S21,
-- S22), a debounce token and an overlap lease (S34) go only if this job still owns them;
-- a success clears the circuit of a throttles_exceptions breaker (S29). A chain's next
-- step is queued and a batch's counters move in the same transaction (S70, S73).
-- Returns the uuids completed. State change: reserved -> finished.
CREATE OR REPLACE FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
SET plan_cache_mode = force_generic_plan  -- planning its statements cost more than running them
AS $$
DECLARE
    -- clock_timestamp: inside run_sql_job's transaction now() is when the handler started
    v_now      timestamptz := coalesce(complete.as_of, clock_timestamp());
    v_slots    smallint[] := pgq._token_slots(complete.tokens);  -- the slots to read (S80)
    v_done     uuid[];
    v_unique   text[];  -- unique locks to release: keys, and the owner token of each
    v_owners   uuid[];
    v_debounce text[];  -- debounce tokens to delete: keys, and the token of each
    v_tokens   uuid[];
    v_breaker_jobs text[];  -- jobs with a throttles_exceptions breaker: their names, breakers and payloads
    v_breakers jsonb[];
    v_breaker_payloads jsonb[];
    v_overlapped uuid[];  -- jobs that held overlap leases, and their keys
    v_overlaps text[];
    v_grouped  uuid[];  -- jobs of batches or chains, with theirs (S70, S73)
    v_batches  uuid[];
    v_chains   uuid[];
    v_steps    int[];
BEGIN
    IF cardinality(complete.uuids) IS DISTINCT FROM cardinality(complete.tokens) THEN
        RAISE EXCEPTION 'pgq: complete needs one token per uuid, got % uuids and % tokens',
            cardinality(complete.uuids), cardinality(complete.tokens) USING ERRCODE = '22023';
    END IF;

    WITH done AS (
        -- One index probe per uuid, and no join that a plan cached on a small table
        -- could turn around (S78). The token is checked against the set: a lease token
        -- names one reservation of one job (its last six bytes are the job's id), so
        -- only the job it was issued for can hold it. The set is a hashed subquery
        -- (lease_token = ANY (tokens) would scan the array for every row); OR false
        -- keeps the planner from making the subquery a join. The slots the tokens name are read, not the others (a reserved job
        -- does not change slot: S80).
        DELETE FROM pgq.jobs j
        WHERE j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
          AND j.uuid = ANY (complete.uuids)
          AND (j.lease_token IN (SELECT unnest(complete.tokens)) OR false)
        RETURNING j.uuid, j.job, j.queue, j.attempts, j.reserved_by, j.lease_token, j.reserved_at, j.started_at,
                  j.unique_key, j.unique_token, j.debounce_key, j.debounce_token, j.overlap_keys, j.payload,
                  j.batch_id, j.chain_id, j.chain_step,
                  -- the first throttles_exceptions of the job, as pgq._middleware finds it:
                  -- a call per job would cost more than the rest of the statement
                  (SELECT m -> 'throttles_exceptions' FROM jsonb_array_elements(j.middleware) m
                   WHERE m ? 'throttles_exceptions' LIMIT 1) AS breaker
    ), history AS (
        INSERT INTO pgq.attempts
            (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome)
        SELECT d.uuid, d.job, d.queue, d.attempts, d.reserved_by, d.lease_token, d.reserved_at, d.started_at,
               v_now, 'succeeded'
        FROM done d
    )
    SELECT coalesce(array_agg(d.uuid), '{}'),
           array_agg(d.unique_key) FILTER (WHERE d.unique_key IS NOT NULL),
           array_agg(d.unique_token) FILTER (WHERE d.unique_key IS NOT NULL),
           array_agg(d.debounce_key) FILTER (WHERE d.debounce_key IS NOT NULL),
           array_agg(d.debounce_token) FILTER (WHERE d.debounce_key IS NOT NULL),
           array_agg(d.job) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.breaker) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.payload) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.uuid) FILTER (WHERE d.overlap_keys IS NOT NULL),
           (SELECT array_agg(k) FROM done o, unnest(o.overlap_keys) k),
           array_agg(d.uuid) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.batch_id) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.chain_id) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.chain_step) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL)
    INTO v_done, v_unique, v_owners, v_debounce, v_tokens, v_breaker_jobs, v_breakers, v_breaker_payloads,
         v_overlapped, v_overlaps, v_grouped, v_batches, v_chains, v_steps
    FROM done d;

    IF v_unique IS NOT NULL OR v_debounce IS NOT NULL THEN
        PERFORM pgq._release_owned(v_unique, v_owners, v_debounce, v_tokens);
    END IF;
    IF v_breakers IS NOT NULL THEN
        PERFORM pgq._clear_circuits(v_breaker_jobs, v_breakers, v_breaker_payloads);
    END IF;
    IF v_overlapped IS NOT NULL THEN
        PERFORM pgq._release_overlap(v_overlapped, v_overlaps);
    END IF;
    IF v_grouped IS NOT NULL THEN
        -- the next step of a chain is queued, and a batch counted, by this transaction
        PERFORM pgq._record_ends('succeeded', v_grouped, v_batches, v_chains, v_steps);
    END IF;

    IF cardinality(v_done) < cardinality(complete.uuids) THEN
        PERFORM pgq._reject('complete',
                            ARRAY(SELECT t.uuid FROM unnest(complete.uuids, complete.tokens) t(uuid, token) WHERE t.uuid <> ALL (v_done)),
                            ARRAY(SELECT t.token FROM unnest(complete.uuids, complete.tokens) t(uuid, token) WHERE t.uuid <> ALL (v_done)),
                            v_now);
    END IF;
    RETURN QUERY SELECT unnest(v_done);
END;
$$;

COMMENT ON FUNCTION pgq.complete(uuid[], uuid[], timestamptz) IS
    'Worker protocol: completes jobs whose lease token still holds them, recording succeeded attempts; stale tokens are rejected and recorded (S15). Returns the uuids completed.';

-- pgq._fail_caught: the exception of a failed attempt that its throttles_exceptions
-- breaker catches (S29): counted on the breaker's circuit, recorded as the attempt's
-- outcome with middleware throttles_exceptions, and the job released with the
-- breaker's backoff, its attempt counted, rather than failed. Returns the attempt.
CREATE OR REPLACE FUNCTION pgq._fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamptz,
                                            p_detail text, p_hint text)
RETURNS pgq.attempts
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
AS $$
DECLARE
    v_decay   int := coalesce((p_breaker ->> 'decay')::int, 600);
    v_delay   int := coalesce((p_breaker ->> 'backoff')::int, 0);
    v_attempt pgq.attempts;
BEGIN
    INSERT INTO pgq.circuits AS c (key, failures, window_start, decay, max_exceptions, last_exception)
    VALUES (pgq._circuit_key(p_job.job, p_job.payload, p_breaker), 1, p_now, v_decay,
            coalesce((p_breaker ->> 'max_exceptions')::int, 10), p_text)
    ON CONFLICT (key) DO UPDATE
        SET failures = CASE WHEN c.window_start + make_interval(secs => c.decay) <= p_now THEN 1 ELSE c.failures + 1 END,
            window_start = CASE WHEN c.window_start + make_interval(secs => c.decay) <= p_now THEN p_now ELSE c.window_start END,
            decay = EXCLUDED.decay, max_exceptions = EXCLUDED.max_exceptions,
            last_exception = EXCLUDED.last_exception, updated_at = now();
    v_attempt := pgq._record(p_job, 'failed', p_now, p_text, v_delay, p_detail => p_detail, p_hint => p_hint);
    UPDATE pgq.attempts a SET middleware = 'throttles_exceptions'
    WHERE a.job_uuid = v_attempt.job_uuid AND a.id = v_attempt.id
    RETURNING * INTO v_attempt;
    UPDATE pgq.jobs j
    SET last_exception = p_text, last_exception_attempt = p_job.attempts,
        available_at = p_now + make_interval(secs => v_delay), wait_reason = 'backoff',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = p_job.uuid;
    RETURN v_attempt;
END;
$$;

COMMENT ON FUNCTION pgq._fail_caught(pgq.jobs, jsonb, text, timestamptz, text, text) IS
    'Outcomes: a failed attempt whose exception a throttles_exceptions breaker catches is counted on its circuit and released with the breaker''s backoff (S29).';

-- pgq.fail: the handler of this attempt raised (or timed out, with timed_out). Decides in
-- one place what follows:
--   fail for good when: timed out with fail_on_timeout (S13); this is the
--   max_exceptions-th exception (S10); the deadline has passed (S9); or, with no deadline,
--   tries > 0 and attempts >= tries (S5, S6; default_tries when the job set none);
--   otherwise back to waiting after backoff[attempts] (1-based; last entry repeats, S7, S8),
--   default_backoff when the job set none.
-- A timeout is not an exception for max_exceptions (S13); the failure text after a
-- timeout is TimeoutExceeded (S18). detail and hint are the exception's DETAIL and HINT,
-- kept with the attempt and the failed job (S88). Returns the attempt recorded (final
-- tells whether the job failed for good), or no row when the token lost its lease
-- (recorded, S15). State change: reserved -> waiting (backoff) | failed.
CREATE OR REPLACE FUNCTION pgq.fail(
    uuid            uuid,
    token           uuid,
    exception       text,
    timed_out       boolean DEFAULT false,
    default_tries   int DEFAULT 1,
    default_backoff int[] DEFAULT '{0}',
    as_of           timestamptz DEFAULT NULL,
    detail          text DEFAULT NULL,
    hint            text DEFAULT NULL
) RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now     timestamptz := coalesce(fail.as_of, now());
    v_job     pgq.jobs;
    v_tries   int;
    v_backoff int[];
    v_delay   int;
    v_text    text;
    v_final   boolean;
    v_outcome text := CASE WHEN fail.timed_out THEN 'timed_out' ELSE 'failed' END;
    v_breaker jsonb;
    v_detail  text := left(fail.detail, 65536);  -- bounded as the exception is (S38)
    v_hint    text := left(fail.hint, 65536);
BEGIN
    PERFORM pgq._check_settings(fail.default_tries, fail.default_backoff, NULL, NULL);
    v_job := pgq._held('fail', fail.uuid, fail.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);

    -- S38: one job's exception is kept to 64 KiB, so it cannot swell the batch it is
    -- reported in.
    v_text := left(coalesce(nullif(fail.exception, ''), 'unknown error'), 65536);
    IF fail.timed_out THEN
        v_text := format('TimeoutExceeded: %s attempt %s ran past its timeout (%s)', v_job.job, v_job.attempts, v_text);
    ELSE
        v_job.exceptions := v_job.exceptions + 1;
        v_job.last_exception := v_text;
        v_job.last_exception_attempt := v_job.attempts;
    END IF;

    -- S29: while a throttles_exceptions breaker catches the exception, it releases the
    -- job with the breaker's backoff instead of failing it.
    v_breaker := pgq._middleware(v_job.middleware, 'throttles_exceptions');
    IF v_breaker IS NOT NULL AND NOT fail.timed_out
       AND (v_breaker ->> 'when' IS NULL OR left(v_text, 4096) ~ (v_breaker ->> 'when')) THEN  -- bounded input (S38)
        RETURN NEXT pgq._fail_caught(v_job, v_breaker, v_text, v_now, v_detail, v_hint);
        RETURN;
    END IF;

    v_tries := coalesce(v_job.tries, fail.default_tries);
    v_final := (fail.timed_out AND v_job.fail_on_timeout)
            OR (NOT fail.timed_out AND v_job.max_exceptions IS NOT NULL AND v_job.exceptions >= v_job.max_exceptions)
            OR (v_job.retry_until IS NOT NULL AND v_now > v_job.retry_until)
            OR (v_job.retry_until IS NULL AND v_tries > 0 AND v_job.attempts >= v_tries);

    IF v_final THEN
        RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, p_final => true, p_detail => v_detail, p_hint => v_hint);
        PERFORM pgq._bury(v_job, v_text, v_now, v_detail, v_hint);
        RETURN;
    END IF;

    v_backoff := coalesce(v_job.backoff, fail.default_backoff);
    v_delay := v_backoff[least(v_job.attempts, cardinality(v_backoff))];
    RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, v_delay, p_detail => v_detail, p_hint => v_hint);
    UPDATE pgq.jobs j
    SET exceptions = v_job.exceptions, last_exception = v_job.last_exception,
        last_exception_attempt = v_job.last_exception_attempt,
        available_at = v_now + make_interval(secs => v_delay), wait_reason = 'backoff',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;

COMMENT ON FUNCTION pgq.fail(uuid, uuid, text, boolean, int, int[], timestamptz, text, text) IS
    'Worker protocol: records a failed or timed-out attempt (with its exception''s DETAIL and HINT, S88) and decides retry with backoff or final failure (S7-S10, S13, S17). Returns the attempt; no row when the lease was lost.';

-- pgq.fail_many: pgq.fail for a batch of attempts, in one statement and one transaction
-- (a worker's failures of the same moment). details and hints, when given, hold each
-- exception's DETAIL and HINT (NULL or '' for none, S88). Returns one attempt row per
-- call whose token still held its job; a missing uuid lost its lease (rejected and
-- recorded, S15).
CREATE OR REPLACE FUNCTION pgq.fail_many(
    uuids           uuid[],
    tokens          uuid[],
    exceptions      text[],
    timed_out       boolean[],
    default_tries   int DEFAULT 1,
    default_backoff int[] DEFAULT '{0}',
    details         text[] DEFAULT NULL,
    hints           text[] DEFAULT NULL
) RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
BEGIN
    IF cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.tokens)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.exceptions)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.timed_out)
       OR (fail_many.details IS NOT NULL AND cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.details))
       OR (fail_many.hints IS NOT NULL AND cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.hints)) THEN
        RAISE EXCEPTION 'pgq: fail_many needs as many tokens, exceptions, timed_out flags (and details and hints, when given) as uuids'
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT a.*
        FROM unnest(fail_many.uuids, fail_many.tokens, fail_many.exceptions, fail_many.timed_out)
                 WITH ORDINALITY AS f(uuid, token, exception, timed_out, n),
             LATERAL pgq.fail(f.uuid, f.token, f.exception, f.timed_out,
                              fail_many.default_tries, fail_many.default_backoff,
                              detail => fail_many.details[f.n], hint => fail_many.hints[f.n]) a;
END;
$$;

COMMENT ON FUNCTION pgq.fail_many(uuid[], uuid[], text[], boolean[], int, int[], text[], text[]) IS
    'Worker protocol: pgq.fail for a batch of attempts in one transaction, with each exception''s DETAIL and HINT (S88); returns the attempts recorded (a missing uuid lost its lease).';

-- pgq.release: the job goes back to waiting for delay seconds without counting an
-- exception and without backoff (S11). With refund the attempt is given back (used when
-- a worker stops, S32: an interrupted attempt must not exhaust the job). Returns the
-- attempt recorded, or no row when the lease was lost (recorded, S15).
-- State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq.release(
    uuid   uuid,
    token  uuid,
    delay  int DEFAULT 0,
    refund boolean DEFAULT false,
    reason text DEFAULT NULL,
    as_of  timestamptz DEFAULT NULL
) RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now timestamptz := coalesce(release.as_of, now());
    v_job pgq.jobs;
BEGIN
    IF release.delay IS NULL OR release.delay < 0 THEN
        RAISE EXCEPTION 'pgq: release delay must be seconds >= 0, got %', release.delay USING ERRCODE = '22023';
    END IF;
    v_job := pgq._held('release', release.uuid, release.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    RETURN NEXT pgq._record(v_job, 'released', v_now, release.reason, release.delay);
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);
    UPDATE pgq.jobs j
    SET attempts = j.attempts - CASE WHEN release.refund THEN 1 ELSE 0 END,
        available_at = v_now + make_interval(secs => release.delay), wait_reason = 'released',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;

COMMENT ON FUNCTION pgq.release(uuid, uuid, int, boolean, text, timestamptz) IS
    'Worker protocol: puts a reserved job back to wait delay seconds, no exception counted (S11); refund gives the attempt back (shutdown, S32).';

-- pgq.give_back: attempts that infrastructure interrupted (S35): the worker lost its
-- connection or the server went away while the handler ran, or a SQL handler's
-- transaction could not commit for a reason of pgq's own (a lock_timeout in
-- pgq.complete, a serialization failure, an admin cancel). Each job held by its token
-- goes back to wait, available now, recorded as interrupted with reason, and its
-- attempt is given back, at most pgq._max_give_backs() times per job; past that the
-- attempt counts. With started false the worker says the handler never started (it could
-- not get a connection for it, say): the give-back then does not count toward that
-- limit. Returns the attempts recorded; a missing uuid lost its lease (rejected and
-- recorded, S15). State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq.give_back(uuids uuid[], tokens uuid[], reason text, started boolean DEFAULT true,
                                         as_of timestamptz DEFAULT NULL)
RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now timestamptz := coalesce(give_back.as_of, now());
    v_job pgq.jobs;
    i     int;
BEGIN
    IF cardinality(give_back.uuids) IS DISTINCT FROM cardinality(give_back.tokens) THEN
        RAISE EXCEPTION 'pgq: give_back needs one token per uuid, got % uuids and % tokens',
            cardinality(give_back.uuids), cardinality(give_back.tokens) USING ERRCODE = '22023';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(give_back.uuids), 0) LOOP
        v_job := pgq._held('give_back', give_back.uuids[i], give_back.tokens[i], v_now);
        CONTINUE WHEN v_job.id IS NULL;
        RETURN NEXT pgq._give_back(v_job, coalesce(give_back.reason, 'interrupted'), v_now, give_back.started);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq.give_back(uuid[], uuid[], text, boolean, timestamptz) IS
    'Worker protocol: attempts interrupted by infrastructure go back to wait, given back rather than counted (at most pgq._max_give_backs() per job, S35).';

-- pgq.give_back_group: attempts whose group was lost (S111): the transaction that ran
-- them together with other jobs ended without a commit (its backend was killed, the
-- commit failed, the connection dropped), so their effects were rolled back. Each job
-- held by its token is given back as pgq.give_back does, uncounted up to its own limit
-- of given-back attempts (S35), and marked to run alone on its next attempt
-- (pgq.sql_alone), so that the job that takes a group down is run, and charged, by
-- itself. A job whose token lost it is neither given back nor marked: its attempt is
-- another's business now. Returns the attempts recorded. State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq.give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamptz DEFAULT NULL)
RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_back pgq.attempts[] := ARRAY(SELECT a FROM pgq.give_back(give_back_group.uuids, give_back_group.tokens,
                                                              give_back_group.reason, true, give_back_group.as_of) a);
BEGIN
    INSERT INTO pgq.sql_alone AS a (job_uuid)
    SELECT DISTINCT b.job_uuid FROM unnest(v_back) b
    ON CONFLICT ON CONSTRAINT sql_alone_pkey DO UPDATE SET marked_at = now();
    RETURN QUERY SELECT * FROM unnest(v_back);
END;
$$;

COMMENT ON FUNCTION pgq.give_back_group(uuid[], uuid[], text, timestamptz) IS
    'Worker protocol: attempts lost with their group go back to wait, given back as pgq.give_back does (S35), each job given back marked to run alone next (S111).';

-- pgq.fail_setup: pgq could not set up this attempt of a SQL handler: the server
-- refused a setting the worker made from the job (its statement_timeout, say) for a
-- reason that trying again cannot change (S92). The job fails for good at once, whatever
-- its tries or deadline, with 'SetupFailed: …' and reason: its handler never ran, so
-- no exception is counted, and it cannot loop. pgq.retry_failed brings it back once
-- what was wrong is fixed. Returns the attempt recorded, or no row when the token lost
-- its lease (recorded, S15). State change: reserved -> failed.
CREATE OR REPLACE FUNCTION pgq.fail_setup(uuid uuid, token uuid, reason text, as_of timestamptz DEFAULT NULL)
RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now  timestamptz := coalesce(fail_setup.as_of, now());
    v_job  pgq.jobs;
    v_text text;
BEGIN
    v_job := pgq._held('fail_setup', fail_setup.uuid, fail_setup.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);
    v_text := format('SetupFailed: attempt %s of %s could not be set up, so its handler never ran: %s',
                     v_job.attempts, v_job.job, left(coalesce(nullif(fail_setup.reason, ''), 'unknown error'), 65536));
    RETURN NEXT pgq._record(v_job, 'failed', v_now, v_text, p_final => true, p_started => false);
    PERFORM pgq._bury(v_job, v_text, v_now);
END;
$$;

COMMENT ON FUNCTION pgq.fail_setup(uuid, uuid, text, timestamptz) IS
    'Worker protocol: the server refused pgq''s own setup of this attempt for a reason of the job''s: it fails for good at once (SetupFailed), no exception counted (S92). Returns the attempt; no row when the lease was lost.';

-- pgq.heartbeat: extends the lease of every job whose token still holds it to now + its
-- queue's retry_after (S14), and renews the overlap leases of those jobs (S34). Returns
-- the lease tokens that still hold their jobs; a token missing from the result has lost
-- its lease, and its handler should stop.
CREATE OR REPLACE FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_slots smallint[] := pgq._token_slots(heartbeat.tokens);  -- as in pgq.complete (S80)
BEGIN
    RETURN QUERY
    WITH held AS (
        UPDATE pgq.jobs j
        SET reserved_until = coalesce(heartbeat.as_of, now())
                             + make_interval(secs => coalesce((SELECT q.retry_after FROM pgq.queues q WHERE q.name = j.queue),
                                                              pgq._default_retry_after()))
            , txid = pg_current_xact_id()  -- the low-water marks of pgq.reserve (S77)
        WHERE j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
          AND j.uuid = ANY (heartbeat.uuids)  -- as in pgq.complete (S78)
          AND (j.lease_token IN (SELECT unnest(heartbeat.tokens)) OR false)
        RETURNING j.uuid, j.lease_token, j.overlap_keys
    ), renewed AS (
        UPDATE pgq.overlap_locks o
        SET expires_at = pgq._overlap_until(o.since, coalesce(heartbeat.as_of, now()), o.expire_after)
        FROM held h
        WHERE h.overlap_keys IS NOT NULL
          AND o.key = ANY (h.overlap_keys) AND o.job_uuid = h.uuid AND o.lease_token = h.lease_token
    )
    SELECT h.lease_token FROM held h;
END;
$$;

COMMENT ON FUNCTION pgq.heartbeat(uuid[], uuid[], timestamptz) IS
    'Worker protocol: extends the leases still held by these tokens and their overlap leases; returns the tokens still holding (S14, S34).';

-- pgq._overlap_key_lock: takes an overlap key's advisory lock for the transaction of a
-- SQL handler, and tells whether it could. A reserve taking or checking the key holds
-- the lock until it commits (see pgq._admit), a few milliseconds, longer on a loaded
-- server; that is no reason to give the attempt back, so a lock held is waited for up
-- to half a second. A lock held longer is an earlier handler's, still running after its
-- lease ended (S34). The wait is a fraction of the shortest timeout (1 s), which counts
-- it: statement_timeout runs from the handler transaction's first statement.
CREATE OR REPLACE FUNCTION pgq._overlap_key_lock(p_lock_id bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '500ms'
AS $$
BEGIN
    IF pg_try_advisory_xact_lock(p_lock_id) THEN
        RETURN true;  -- the common case, without the subtransaction below
    END IF;
    BEGIN
        PERFORM pg_advisory_xact_lock(p_lock_id);
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
END;
$$;

COMMENT ON FUNCTION pgq._overlap_key_lock(bigint) IS 'Takes an overlap key''s advisory lock for a SQL handler''s transaction, waiting up to 0.5 s for a reserve that holds it; false when it is still held (S34).';

-- pgq._sql_job: the start of pgq.run_sql_job, with pgq's privileges: the handler and
-- payload of the job this token holds, the search_path pinned for the handler when its
-- function pins none (S86), having taken the advisory lock of each of its overlap keys
-- for the transaction (see pgq.run_sql_job). Raises PQ001 when the token no longer holds
-- the job, 42883 when its handler function is gone, PQ002 when a key is still locked.
-- p_grouped: the job would run in a group with others (S109); it raises PQ003 when the
-- job must run alone, its class isolated (S112) or its last attempt lost with its group
-- (S111). Run alone, the job's mark goes (with the transaction's commit).
CREATE OR REPLACE FUNCTION pgq._sql_job(p_uuid uuid, p_token uuid, p_grouped boolean,
                                        OUT handler regprocedure, OUT payload jsonb,
                                        OUT worker text, OUT attempt integer, OUT search_path text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job      record;
    v_isolated boolean;
    v_alone    boolean;
    v_found    boolean;
    v_key      text;
BEGIN
    v_job := pgq._held_job(p_uuid, p_token);  -- (it locks the token's slot alone: S80)
    IF v_job.id IS NULL THEN
        RAISE EXCEPTION 'pgq: job % is not held by lease token %', p_uuid, p_token USING ERRCODE = 'PQ001';
    END IF;
    IF NOT p_grouped THEN
        DELETE FROM pgq.sql_alone a WHERE a.job_uuid = p_uuid;
    ELSE
        SELECT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = v_job.job AND c.isolated),
               EXISTS (SELECT FROM pgq.sql_alone a WHERE a.job_uuid = p_uuid)
        INTO v_isolated, v_alone;
        IF v_isolated OR v_alone THEN
            RAISE EXCEPTION 'pgq: job % runs alone, not in a group', p_uuid
                USING ERRCODE = 'PQ003', DETAIL = CASE WHEN v_isolated THEN format('Its class %s is isolated.', v_job.job)
                                                       ELSE 'Its last attempt was lost with its group.' END;
        END IF;
    END IF;
    -- The handler function, and the search_path pinned for it (NULL: none).
    SELECT true, h.search_path INTO v_found, search_path
    FROM pg_proc p LEFT JOIN pgq.handler_search_paths h ON h.handler = p.oid
    WHERE p.oid = v_job.handler;
    IF v_found IS NULL THEN
        RAISE EXCEPTION 'pgq: handler function of job % does not exist: function %, its handler when the job was dispatched, was dropped since',
            v_job.job, v_job.handler::oid
            USING ERRCODE = '42883',
                  HINT = 'Keep handlers with CREATE OR REPLACE; after a DROP, define the class again and retry the failed jobs (pgq.retry_failed takes the class''s handler).';
    END IF;
    IF v_job.overlap_keys IS NOT NULL THEN  -- (most jobs have none: then no statement)
        FOR v_key IN
            SELECT o.key FROM pgq.overlap_locks o
            WHERE o.key = ANY (v_job.overlap_keys) AND o.job_uuid = p_uuid AND o.expire_after IS NULL
        LOOP
            IF NOT pgq._overlap_key_lock(pgq._overlap_lock_id(v_key)) THEN
                RAISE EXCEPTION 'pgq: overlap key % is still held by a handler whose lease ended', v_key
                    USING ERRCODE = 'PQ002';
            END IF;
        END LOOP;
    END IF;
    handler := v_job.handler;
    payload := v_job.payload;
    worker := v_job.reserved_by;
    attempt := v_job.attempts;
END;
$$;

COMMENT ON FUNCTION pgq._sql_job(uuid, uuid, boolean) IS 'The handler and payload of a SQL job held by a lease token, and its pinned search_path (S86), its overlap keys locked for the transaction; PQ003 in a group for a job that must run alone (S111, S112); the privileged start of pgq.run_sql_job.';

-- pgq.run_sql_job: runs a job's SQL handler function with its payload, then completes
-- the job, in the caller's transaction: the function's effects and the completion commit
-- together. Call it after setting statement_timeout to the job's timeout.
-- It is not SECURITY DEFINER: the handler runs with the privileges of the role that
-- calls it, the worker's login role, never pgq's owner (S44). Its search_path is
-- pg_catalog, the schemas pgq.define_job pinned for it, pg_temp; or pg_catalog, pg_temp
-- when none were; a function that pins its own search_path runs with that one (S86).
-- The transaction holds the advisory lock of each of the job's overlap keys, so a second
-- handler of a key cannot start while this one runs, even after its lease ended (S34);
-- not of a key whose middleware sets expire_after, which says another job may take the
-- key after that long even while this one runs (S27).
-- Errors tell the worker whose fault an attempt's end was (S35):
--   PQ100  the handler raised: the attempt's exception, with its message, DETAIL and
--          HINT (S88); a table or function it did not find (42P01, 42883) gets a HINT
--          naming the search_path it ran with and the fix, when it raised none (S86);
--   42883  the handler function does not exist: the attempt's exception too;
--   57014  statement timeout: the handler ran past the job's timeout;
--   PQ001  the token no longer holds the job (roll back: the effects are discarded);
--   PQ002  an overlap key is still locked by a handler whose lease ended: not this
--          attempt's fault;
--   PQ003  grouped, and the job must run alone (S111, S112): its handler did not run;
--   anything else (lock_timeout or a serialization failure in pgq.complete, a lost
--          connection, an admin cancel) is infrastructure: not the handler's fault.
-- The handler reads its job from transaction-local settings: pgq.job_uuid,
-- pgq.job_attempt and pgq.worker (current_setting('pgq.job_uuid')), S48; and
-- pgq.job_token, the attempt's lease token, by which pgq.add_to_batch knows a running
-- member of a batch (S93).
-- grouped: the caller runs this job in a savepoint of a transaction that runs others
-- too (S109); the settings above then name the job whose savepoint runs. The job is
-- not completed here: the caller completes the group's jobs with one pgq.complete in
-- the same transaction, and rolls the whole transaction back when that call does not
-- complete every one of them (a lease lost meanwhile), so no job's effects commit
-- without its completion.
-- No dynamic SQL but the call: the handler is a regprocedure, so it cannot inject
-- anything.
CREATE OR REPLACE FUNCTION pgq.run_sql_job(uuid uuid, token uuid, grouped boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job    record;
    v_call   text;
    v_state  text;
    v_msg    text;
    v_detail text;
    v_hint   text;
BEGIN
    v_job := pgq._sql_job(run_sql_job.uuid, run_sql_job.token, run_sql_job.grouped);
    PERFORM set_config('pgq.job_uuid', run_sql_job.uuid::text, true),
            set_config('pgq.job_token', run_sql_job.token::text, true),
            set_config('pgq.job_attempt', v_job.attempt::text, true),
            set_config('pgq.worker', coalesce(v_job.worker, ''), true);
    -- Written under pgq's own search_path, where the handler's name always comes out
    -- schema-qualified.
    v_call := format('SELECT %s($1)', v_job.handler::regproc);
    IF v_job.search_path IS NOT NULL THEN
        -- For this call only: the function's own SET search_path ends with it (S86).
        PERFORM set_config('search_path', 'pg_catalog, ' || v_job.search_path || ', pg_temp', true);
    END IF;
    BEGIN
        EXECUTE v_call USING v_job.payload;
    EXCEPTION WHEN OTHERS THEN  -- not query_canceled: a statement timeout stays 57014
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT,
                                v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
        IF v_state IN ('42P01', '42883') AND v_hint = '' THEN
            v_hint := pgq._handler_path_hint(v_job.handler, v_job.search_path, v_msg);
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'PQ100', MESSAGE = v_msg, DETAIL = v_detail, HINT = v_hint;
    END;
    PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    IF run_sql_job.grouped THEN
        RETURN;  -- the caller completes its group's jobs together, before its commit
    END IF;
    IF NOT EXISTS (SELECT FROM pgq.complete(ARRAY[run_sql_job.uuid], ARRAY[run_sql_job.token])) THEN
        RAISE EXCEPTION 'pgq: job % lost its lease while its handler ran', run_sql_job.uuid USING ERRCODE = 'PQ001';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq.run_sql_job(uuid, uuid, boolean) IS
    'Worker protocol: runs the job''s SQL handler with its payload, as the calling role and with its pinned search_path (S86), and completes the job in the same transaction; PQ100 marks the handler''s own exception, with its DETAIL and HINT (S35, S44, S88); grouped: in a savepoint of a group, completed by the caller with the group''s other jobs, PQ003 for a job that must run alone (S109-S112).';
