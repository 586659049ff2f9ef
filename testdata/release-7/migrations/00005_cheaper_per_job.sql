-- Cheaper completions and reservations (issue 6).
--
-- A profile of the 100,000-job drain (perf on the server) put pgq.complete at about 45% of
-- PostgreSQL's time, and it measured two costs the work does not need:
--
-- * The done CTE returned every column of each deleted job, and three more DELETE ...
--   USING done statements (unique locks, debounce tokens, circuits) each read every row
--   of it, most of them jobs without a key. A CTE joined as a plain relation in an UPDATE
--   or DELETE is locked by a copy of the whole row (for EvalPlanQual rechecks), so each
--   row was formed three more times as a whole-row value: a fifth of the function's time.
--   Now the statement returns only the columns the history needs and collects the keys,
--   and the key deletes run only when a completed job has one.
-- * Each success inserted into two indexes of pgq.attempts: the primary key on id and
--   the job_uuid index. The history is read by job (a job's attempts in order, the
--   history of pgq.failed): one primary key (job_uuid, id) serves those lookups in order
--   and keeps each row unique, with one index entry per attempt instead of two. On an
--   existing installation the new key is built under a lock on pgq.attempts: prune a
--   large history (pgq.prune) before migrating.
--
-- pgbench, reserve(500) then complete of the same jobs, alternating in one run:
-- complete took 6.1-7.2 ms before and 3.6-4.8 ms after the first change; without the
-- second index 3.4-4.4 ms.
--
-- And one for the reserve, the worker's critical path: every reservation is a non-HOT
-- update, so it adds an entry for the job's new row version to jobs_pkey, on the leaf
-- page that already holds the job's uuid. Those pages were filled by dispatch at the
-- default 90%, so they soon overflow and PostgreSQL runs a bottom-up deletion pass,
-- visiting heap pages to find the old versions it may remove: 6-9% of the reserving
-- backend's time in perf. Leaf pages split at half full keep room for the new versions
-- until the worker's vacuum. reserve(500) + complete in pgbench: 12.2-15.0 ms with the
-- default fillfactor, 11.9-13.1 ms with 50; drain A/B (5 pairs): 37.4k -> 40.0k jobs/s
-- (medians). Fillfactor 25 measured no better. The cost is an index twice the size and
-- about 28 bytes more WAL per job from its page splits. Pages already full keep their
-- fill until the index is rebuilt (REINDEX INDEX CONCURRENTLY pgq.jobs_pkey).

-- +goose Up
-- +goose StatementBegin
-- pgq.complete: the attempts of these jobs succeeded. Each job is deleted only when its
-- lease token still holds it; the attempt is recorded as succeeded. Calls whose token lost
-- its lease are rejected and recorded on that token's attempt (S15). A unique lock (S21,
-- S22) and a debounce token go only if this job still owns them; a success clears the
-- circuit of a throttles_exceptions breaker (S29).
-- Returns the uuids completed. State change: reserved -> finished.
CREATE OR REPLACE FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan  -- planning its statements cost more than running them
AS $$
DECLARE
    -- clock_timestamp: inside run_sql_job's transaction now() is when the handler started
    v_now      timestamptz := coalesce(complete.as_of, clock_timestamp());
    v_done     uuid[];
    v_unique   text[];  -- unique locks to release: keys, and the owner token of each
    v_owners   uuid[];
    v_debounce text[];  -- debounce tokens to delete: keys, and the token of each
    v_tokens   uuid[];
    v_circuits text[];
BEGIN
    IF cardinality(complete.uuids) IS DISTINCT FROM cardinality(complete.tokens) THEN
        RAISE EXCEPTION 'pgq: complete needs one token per uuid, got % uuids and % tokens',
            cardinality(complete.uuids), cardinality(complete.tokens) USING ERRCODE = '22023';
    END IF;

    WITH done AS (
        DELETE FROM pgq.jobs j
        USING unnest(complete.uuids, complete.tokens) AS t(uuid, token)
        WHERE j.uuid = t.uuid
          AND j.lease_token = t.token
        RETURNING j.uuid, j.job, j.queue, j.attempts, j.reserved_by, j.lease_token, j.reserved_at, j.started_at,
                  j.unique_key, j.unique_token, j.debounce_key, j.debounce_token,
                  CASE WHEN j.middleware IS NOT NULL
                       THEN pgq._circuit_key(j.job, j.payload, pgq._middleware(j.middleware, 'throttles_exceptions'))
                  END AS circuit
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
           array_agg(d.circuit) FILTER (WHERE d.circuit IS NOT NULL)
    INTO v_done, v_unique, v_owners, v_debounce, v_tokens, v_circuits
    FROM done d;

    IF v_unique IS NOT NULL THEN
        -- S21/S22: the lock goes after an attempt that finished, if this job still owns it
        DELETE FROM pgq.unique_locks u
        USING unnest(v_unique, v_owners) AS l(key, owner)
        WHERE u.key = l.key AND u.owner = l.owner;
    END IF;
    IF v_debounce IS NOT NULL THEN
        DELETE FROM pgq.debounce_tokens d
        USING unnest(v_debounce, v_tokens) AS t(key, token)
        WHERE d.key = t.key AND d.token = t.token;
    END IF;
    IF v_circuits IS NOT NULL THEN
        -- S29: a success clears the circuit's count
        DELETE FROM pgq.circuits c WHERE c.key = ANY (v_circuits);
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
-- +goose StatementEnd

ALTER TABLE pgq.attempts DROP CONSTRAINT attempts_pkey, ADD CONSTRAINT attempts_pkey PRIMARY KEY (job_uuid, id);
DROP INDEX pgq.attempts_job_uuid_idx;

ALTER INDEX pgq.jobs_pkey SET (fillfactor = 50);

-- +goose StatementBegin
-- pgq.fail, restated only to find the attempt it marks as throttled by its primary key
-- (job_uuid, id).
-- pgq.fail: the handler of this attempt raised (or timed out, with timed_out). Decides in
-- one place what follows:
--   fail for good when: timed out with fail_on_timeout (S13); this is the
--   max_exceptions-th exception (S10); the deadline has passed (S9); or, with no deadline,
--   tries > 0 and attempts >= tries (S5, S6; default_tries when the job set none);
--   otherwise back to waiting after backoff[attempts] (1-based; last entry repeats, S7, S8),
--   default_backoff when the job set none.
-- A timeout is not an exception for max_exceptions (S13); the failure text after a
-- timeout is TimeoutExceeded (S18). Returns the attempt recorded (final tells whether the
-- job failed for good), or no row when the token lost its lease (recorded, S15).
-- State change: reserved -> waiting (backoff) | failed.
CREATE OR REPLACE FUNCTION pgq.fail(
    uuid            uuid,
    token           uuid,
    exception       text,
    timed_out       boolean DEFAULT false,
    default_tries   int DEFAULT 1,
    default_backoff int[] DEFAULT '{0}',
    as_of           timestamptz DEFAULT NULL
) RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE AS $$
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
    v_circuit text;
    v_decay   int;
    v_attempt pgq.attempts;
BEGIN
    PERFORM pgq._check_settings(fail.default_tries, fail.default_backoff, NULL, NULL);
    v_job := pgq._held('fail', fail.uuid, fail.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;

    v_text := coalesce(nullif(fail.exception, ''), 'unknown error');
    IF fail.timed_out THEN
        v_text := format('TimeoutExceeded: %s attempt %s ran past its timeout (%s)', v_job.job, v_job.attempts, v_text);
    ELSE
        v_job.exceptions := v_job.exceptions + 1;
        v_job.last_exception := v_text;
        v_job.last_exception_attempt := v_job.attempts;
    END IF;

    -- S29: while a throttles_exceptions breaker catches the exception, it counts it on
    -- the circuit and releases the job with the breaker's backoff instead of failing it.
    v_breaker := pgq._middleware(v_job.middleware, 'throttles_exceptions');
    IF v_breaker IS NOT NULL AND NOT fail.timed_out
       AND (v_breaker ->> 'when' IS NULL OR v_text ~ (v_breaker ->> 'when')) THEN
        v_circuit := pgq._circuit_key(v_job.job, v_job.payload, v_breaker);
        v_decay := coalesce((v_breaker ->> 'decay')::int, 600);
        INSERT INTO pgq.circuits AS c (key, failures, window_start, decay, max_exceptions, last_exception)
        VALUES (v_circuit, 1, v_now, v_decay, coalesce((v_breaker ->> 'max_exceptions')::int, 10), v_text)
        ON CONFLICT (key) DO UPDATE
            SET failures = CASE WHEN c.window_start + make_interval(secs => c.decay) <= v_now THEN 1 ELSE c.failures + 1 END,
                window_start = CASE WHEN c.window_start + make_interval(secs => c.decay) <= v_now THEN v_now ELSE c.window_start END,
                decay = EXCLUDED.decay, max_exceptions = EXCLUDED.max_exceptions,
                last_exception = EXCLUDED.last_exception, updated_at = now();
        v_delay := coalesce((v_breaker ->> 'backoff')::int, 0);
        v_attempt := pgq._record(v_job, v_outcome, v_now, v_text, v_delay);
        UPDATE pgq.attempts a SET middleware = 'throttles_exceptions'
        WHERE a.job_uuid = v_attempt.job_uuid AND a.id = v_attempt.id
        RETURNING * INTO v_attempt;
        RETURN NEXT v_attempt;
        UPDATE pgq.jobs j
        SET last_exception = v_text, last_exception_attempt = v_job.attempts,
            available_at = v_now + make_interval(secs => v_delay), wait_reason = 'backoff',
            reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
        WHERE j.uuid = v_job.uuid;
        RETURN;
    END IF;

    v_tries := coalesce(v_job.tries, fail.default_tries);
    v_final := (fail.timed_out AND v_job.fail_on_timeout)
            OR (NOT fail.timed_out AND v_job.max_exceptions IS NOT NULL AND v_job.exceptions >= v_job.max_exceptions)
            OR (v_job.retry_until IS NOT NULL AND v_now > v_job.retry_until)
            OR (v_job.retry_until IS NULL AND v_tries > 0 AND v_job.attempts >= v_tries);

    IF v_final THEN
        RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, p_final => true);
        PERFORM pgq._bury(v_job, v_text, v_now);
        RETURN;
    END IF;

    v_backoff := coalesce(v_job.backoff, fail.default_backoff);
    v_delay := v_backoff[least(v_job.attempts, cardinality(v_backoff))];
    RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, v_delay);
    UPDATE pgq.jobs j
    SET exceptions = v_job.exceptions, last_exception = v_job.last_exception,
        last_exception_attempt = v_job.last_exception_attempt,
        available_at = v_now + make_interval(secs => v_delay), wait_reason = 'backoff',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The functions keep their bodies above: they work with either set of indexes.
ALTER TABLE pgq.attempts DROP CONSTRAINT attempts_pkey, ADD CONSTRAINT attempts_pkey PRIMARY KEY (id);
CREATE INDEX attempts_job_uuid_idx ON pgq.attempts (job_uuid);
ALTER INDEX pgq.jobs_pkey RESET (fillfactor);
