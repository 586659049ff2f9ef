-- Speed of the reserve path (issue 6), measured with pgbench on reserve(500) + complete:
--
-- * Random bits cost a system call each through gen_random_uuid(): job uuids take theirs
--   from random(), lease tokens one base per reserve call (reserve(500) 9.6 -> 7.4 ms,
--   dispatch_many of 1,000 jobs 12.7 -> 9.5 ms).
-- * Job uuids are time-ordered (version 7 layout: 48-bit milliseconds, then random), so
--   the uuid index of pgq.jobs and the job_uuid index of pgq.attempts take new entries
--   at their right edge instead of on random leaf pages: the entries a reserve and a
--   complete touch sit on few pages.
-- * pgq.reserve no longer builds an array of whole job rows and unnests it twice: it
--   locks the picked rows, reserves and returns the jobs no pickup check applies to in
--   one UPDATE ... RETURNING (by ctid: a TID scan, no index lookup), and walks only the
--   others one by one.
-- * uuid, the job's identity everywhere else, becomes the primary key of pgq.jobs. id
--   stays as the dispatch order (the FIFO tie-break inside jobs_reserve_idx) without an
--   index of its own: every reservation, a non-HOT update, no longer inserts an entry
--   into a third unique index (reserve(500) 11.1 -> 9.7 ms with the TID scan).

-- +goose Up
-- +goose StatementBegin
-- pgq._uuid7: a version 7 uuid (RFC 9562): Unix milliseconds in the first 48 bits, then
-- the version and variant, the rest random. PostgreSQL 15 has no uuidv7(). The random
-- bits come from two draws of the backend's random() (a PRNG seeded from strong
-- randomness when the backend starts) hashed by md5, not from gen_random_uuid():
-- pg_strong_random goes through OpenSSL, which makes a getpid() system call on every
-- call, and that was a quarter of the time of a 1,000-job dispatch_many here. These
-- uuids identify jobs; they are not secrets. A collision would fail its insert on the
-- primary key, not merge two jobs.
CREATE FUNCTION pgq._uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(
        set_bit(set_bit(set_bit(set_bit(set_bit(set_bit(
            overlay(decode(md5(random()::text || random()::text), 'hex')
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1), 54, 1), 55, 0),  -- version nibble 0111 (7)
            70, 0), 71, 1),                  -- variant 10
        'hex')::uuid;
$$;
-- +goose StatementEnd

ALTER TABLE pgq.jobs ALTER COLUMN uuid SET DEFAULT pgq._uuid7();

ALTER TABLE pgq.jobs DROP CONSTRAINT jobs_pkey, DROP CONSTRAINT jobs_uuid_key,
                     ADD CONSTRAINT jobs_pkey PRIMARY KEY (uuid);
COMMENT ON COLUMN pgq.jobs.id IS 'Dispatch order: the FIFO tie-break of jobs_reserve_idx. Not indexed on its own; uuid is the key.';

-- The functions that found a job row by id now find it by uuid.
-- +goose StatementBegin
-- pgq._bury: the job fails for good (S17): it leaves pgq.jobs, a pgq.failed_jobs row is
-- written and a job_failed event is sent on commit. State change: reserved -> failed.
CREATE OR REPLACE FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
    PERFORM pgq._release_unique(p_job.unique_key, p_job.unique_token);  -- S21: released when it fails for good
    DELETE FROM pgq.debounce_tokens d WHERE d.key = p_job.debounce_key AND d.token = p_job.debounce_token;
    INSERT INTO pgq.failed_jobs
        (uuid, queue, payload, exception, failed_at, job, attempts, priority, handler, tries, backoff,
         max_exceptions, timeout, fail_on_timeout, retry_until, unique_key, unique_token, unique_until,
         debounce_key, debounce_token, middleware, dispatched_at)
    VALUES (p_job.uuid, p_job.queue, p_job.payload, p_exception, p_now, p_job.job, p_job.attempts,
            p_job.priority, p_job.handler, p_job.tries, p_job.backoff, p_job.max_exceptions, p_job.timeout,
            p_job.fail_on_timeout, p_job.retry_until, p_job.unique_key, p_job.unique_token, p_job.unique_until,
            p_job.debounce_key, p_job.debounce_token, p_job.middleware, p_job.created_at)
    ON CONFLICT (uuid) DO UPDATE
        SET queue = EXCLUDED.queue, payload = EXCLUDED.payload, exception = EXCLUDED.exception,
            failed_at = EXCLUDED.failed_at, attempts = EXCLUDED.attempts;
    PERFORM pg_notify('pgq_events', json_build_object(
        'event', 'job_failed', 'uuid', p_job.uuid, 'job', p_job.job, 'queue', p_job.queue)::text);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._turn_away: a middleware sent the job back before its handler ran: the attempt is
-- recorded as turned_away with the middleware's name, and the job waits delay seconds
-- (no exception, no backoff), or with dont_release is deleted without a failure (S27).
CREATE OR REPLACE FUNCTION pgq._turn_away(
    p_job pgq.jobs, p_middleware text, p_note text, p_delay int, p_drop boolean, p_now timestamptz
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome,
         middleware, exception, delay)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, NULL, p_now, 'turned_away', p_middleware, p_note,
            CASE WHEN NOT p_drop THEN p_delay END);
    IF p_drop THEN
        DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
        PERFORM pgq._release_unique(p_job.unique_key, p_job.unique_token);
        DELETE FROM pgq.debounce_tokens d WHERE d.key = p_job.debounce_key AND d.token = p_job.debounce_token;
        RETURN;
    END IF;
    UPDATE pgq.jobs j
    SET available_at = p_now + make_interval(secs => p_delay), wait_reason = 'turned_away',
        turn_aways = jsonb_set(j.turn_aways, ARRAY[p_middleware], to_jsonb(coalesce((j.turn_aways ->> p_middleware)::int, 0) + 1)),
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.uuid = p_job.uuid;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
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
        UPDATE pgq.attempts a SET middleware = 'throttles_exceptions' WHERE a.id = v_attempt.id RETURNING * INTO v_attempt;
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

-- +goose StatementBegin
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
LANGUAGE plpgsql VOLATILE AS $$
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
    UPDATE pgq.jobs j
    SET attempts = j.attempts - CASE WHEN release.refund THEN 1 ELSE 0 END,
        available_at = v_now + make_interval(secs => release.delay), wait_reason = 'released',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.reserve: reserves up to max jobs for a worker, taking the queues in the order given
-- (S30) and, within a queue, by priority then FIFO, with FOR UPDATE SKIP LOCKED.
-- First sweeps expired leases of those queues back to waiting, recording each as
-- lease_expired (S14). Then applies the pickup checks to every reserved job: a job whose
-- attempts exceed its tries (default_tries when it set none; 0 = unlimited) or whose
-- deadline passed fails before its handler runs (S12). Later checks (debounce, unique,
-- middleware) belong in the same loop. Returns only jobs whose handler may run, each
-- with a fresh lease_token and attempts already counted (S5), and (with pickup set, not to
-- be run) the jobs exhausted, debounced or turned away by middleware in this call, so the
-- worker can log every outcome. Middleware (S26-S29) runs after the debounce and S12
-- checks and before an until-processing lock is released (S23: a turn-away keeps it).
-- State change: waiting -> reserved; reserved (lease ended) -> waiting -> reserved;
-- waiting -> failed (exhausted) | deleted (debounced, dont_release) | waiting (turned away).
-- Call it on the worker's session connection: overlap locks belong to that session.
CREATE OR REPLACE FUNCTION pgq.reserve(
    worker        text,
    queues        text[],
    max           int,
    default_tries int DEFAULT 1,
    as_of         timestamptz DEFAULT NULL
) RETURNS SETOF pgq.reservations
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now   timestamptz := coalesce(reserve.as_of, now());
    v_admit record;
    v_seen  bigint[] := '{}';  -- turned away in this call: due again at once with release_after 0
    v_left  int := reserve.max;
    v_queue text;
    v_lease int;
    v_paused boolean;
    v_job   pgq.jobs;
    v_tries int;
    v_want  int;
    v_picked int;
    v_fast  int;
    v_ids   tid[];  -- the picked rows, locked by this transaction: their ctid cannot change
    -- Lease tokens: one random base per call, the job's id in its last six bytes. Unique
    -- per reservation without a gen_random_uuid() (and its getpid() system call) per job.
    v_token bytea := uuid_send(gen_random_uuid());
BEGIN
    IF reserve.max IS NULL OR reserve.max < 1 THEN
        RAISE EXCEPTION 'pgq: reserve max must be >= 1, got %', reserve.max USING ERRCODE = '22023';
    END IF;
    IF reserve.default_tries IS NULL OR reserve.default_tries < 0 THEN
        RAISE EXCEPTION 'pgq: default_tries must be >= 0, got %', reserve.default_tries USING ERRCODE = '22023';
    END IF;

    -- Expired leases come back to waiting (S14). SKIP LOCKED: two workers never sweep
    -- the same row, and a job being completed right now is left alone.
    WITH expired AS (
        SELECT j.*
        FROM pgq.jobs j
        WHERE j.reserved_until < v_now
          AND j.queue = ANY (reserve.queues)
        ORDER BY j.reserved_until
        LIMIT 1000
        FOR UPDATE SKIP LOCKED
    ), back AS (
        UPDATE pgq.jobs j
        SET reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL,
            started_at = NULL, lease_expiries = j.lease_expiries + 1, wait_reason = 'lease_expired'
        FROM expired e
        WHERE j.uuid = e.uuid
    )
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome, exception)
    SELECT e.uuid, e.job, e.queue, e.attempts, e.reserved_by, e.lease_token, e.reserved_at, e.started_at,
           e.reserved_until, 'lease_expired',
           format('lease ended at %s without a heartbeat from worker %s', e.reserved_until, e.reserved_by)
    FROM expired e;

    FOREACH v_queue IN ARRAY reserve.queues LOOP
        EXIT WHEN v_left <= 0;
        SELECT q.retry_after, q.paused INTO v_lease, v_paused FROM pgq.queues q WHERE q.name = v_queue;
        CONTINUE WHEN v_paused;
        v_lease := coalesce(v_lease, 90);

        -- Exhausted jobs do not fill the batch: pick again until it is full or the
        -- queue has no more ready jobs.
        LOOP
            v_want := v_left;
            -- Lock the next waiting jobs in order (SKIP LOCKED). The lock holds them for
            -- this transaction whatever happens below.
            v_ids := ARRAY (
                SELECT p.ctid
                FROM pgq.jobs p
                WHERE p.queue = v_queue
                  AND p.reserved_at IS NULL
                  AND p.available_at <= v_now
                  AND p.id <> ALL (v_seen)
                ORDER BY p.priority DESC, p.available_at, p.id
                LIMIT v_want
                FOR UPDATE SKIP LOCKED);
            v_picked := cardinality(v_ids);
            EXIT WHEN v_picked = 0;

            -- Fast path, set-based: jobs no pickup check applies to (no debounce, no
            -- middleware, no until-processing lock, not exhausted) are reserved and go
            -- out in one statement. ctid = ANY ($1) is a TID scan: no index lookup, and
            -- the cached generic plan stays good (force_generic_plan below).
            RETURN QUERY
            WITH upd AS (
                UPDATE pgq.jobs j
                SET attempts = j.attempts + 1,
                    reserved_at = v_now,
                    reserved_until = v_now + make_interval(secs => v_lease),
                    reserved_by = reserve.worker,
                    lease_token = encode(overlay(v_token PLACING substring(int8send(j.id) FROM 3) FROM 11 FOR 6), 'hex')::uuid,
                    started_at = v_now
                WHERE j.ctid = ANY (v_ids)
                  AND NOT pgq._needs_pickup_check(j.debounce_key, j.middleware, j.unique_until, j.retry_until,
                                                  j.tries, j.attempts + 1, reserve.default_tries, v_now)
                RETURNING j.*
            )
            SELECT u.*, NULL::text, NULL::text, NULL::text FROM upd u;
            GET DIAGNOSTICS v_fast = ROW_COUNT;
            v_left := v_left - v_fast;

            -- The others, one by one: reserved here, then checked.
            FOR v_job IN
                UPDATE pgq.jobs j
                SET attempts = j.attempts + 1,
                    reserved_at = v_now,
                    reserved_until = v_now + make_interval(secs => v_lease),
                    reserved_by = reserve.worker,
                    lease_token = encode(overlay(v_token PLACING substring(int8send(j.id) FROM 3) FROM 11 FOR 6), 'hex')::uuid,
                    started_at = v_now
                WHERE v_fast < v_picked
                  AND j.ctid = ANY (v_ids)
                  AND j.reserved_at IS NULL
                RETURNING j.*
            LOOP
                -- Pickup check S24: a debounced job whose token is no longer its key's
                -- current one is deleted without running (first attempt and retries).
                IF v_job.debounce_key IS NOT NULL AND NOT EXISTS (
                    SELECT FROM pgq.debounce_tokens d WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token
                ) THEN
                    PERFORM pgq._record(v_job, 'debounced', v_now, 'superseded by a newer dispatch of ' || v_job.debounce_key,
                                        p_started => false);
                    DELETE FROM pgq.jobs j WHERE j.uuid = v_job.uuid;
                    PERFORM pg_notify('pgq_events', json_build_object(
                        'event', 'job_debounced', 'uuid', v_job.uuid, 'job', v_job.job, 'key', v_job.debounce_key)::text);
                    RETURN NEXT pgq._reported(v_job, 'debounced', 'superseded by a newer dispatch of ' || v_job.debounce_key);
                    CONTINUE;
                END IF;
                -- Pickup check S12: already exhausted, fail before the handler runs (this
                -- also releases an until-processing lock: S23, beyond Laravel).
                v_tries := coalesce(v_job.tries, reserve.default_tries);
                IF (v_job.retry_until IS NOT NULL AND v_now > v_job.retry_until)
                   OR (v_job.retry_until IS NULL AND v_tries > 0 AND v_job.attempts > v_tries) THEN
                    PERFORM pgq._record(v_job, 'exhausted', v_now, pgq._exhausted_message(v_job, v_now),
                                        p_final => true, p_started => false);
                    PERFORM pgq._bury(v_job, pgq._exhausted_message(v_job, v_now), v_now);
                    RETURN NEXT pgq._reported(v_job, 'exhausted', pgq._exhausted_message(v_job, v_now));
                    CONTINUE;
                END IF;
                -- Middleware, in order (S26-S29). A turn-away uses the attempt (S5), is
                -- recorded (S19) and keeps an until-processing lock (S23).
                IF v_job.middleware IS NOT NULL THEN
                    v_admit := pgq._admit(v_job, v_now);
                    IF v_admit.error IS NOT NULL THEN
                        PERFORM pgq._record(v_job, 'failed', v_now, v_admit.error, p_final => true, p_started => false);
                        PERFORM pgq._bury(v_job, v_admit.error, v_now);
                        RETURN NEXT pgq._reported(v_job, 'failed', v_admit.error);
                        CONTINUE;
                    END IF;
                    IF v_admit.turned_by IS NOT NULL THEN
                        PERFORM pgq._turn_away(v_job, v_admit.turned_by, v_admit.note, v_admit.delay, v_admit.drop, v_now);
                        v_seen := v_seen || v_job.id;
                        RETURN NEXT pgq._reported(v_job, 'turned_away', v_admit.note, v_admit.turned_by);
                        CONTINUE;
                    END IF;
                    IF cardinality(v_admit.held) > 0 THEN
                        v_job.overlap_keys := v_admit.held;
                        UPDATE pgq.jobs j SET overlap_keys = v_admit.held WHERE j.uuid = v_job.uuid;
                    END IF;
                END IF;
                -- The handler will run: an until-processing lock goes now (S23,
                -- owner-checked, so a retry's release leaves a newer copy's lock alone),
                -- and the debounce burst is over.
                IF v_job.unique_until = 'processing' THEN
                    PERFORM pgq._release_unique(v_job.unique_key, v_job.unique_token);
                END IF;
                IF v_job.debounce_key IS NOT NULL THEN
                    UPDATE pgq.debounce_tokens d SET burst_started_at = NULL
                    WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token;
                END IF;
                v_left := v_left - 1;
                RETURN NEXT pgq._reported(v_job, NULL, NULL);
            END LOOP;
            EXIT WHEN v_picked < v_want OR v_left <= 0;
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE pgq.jobs DROP CONSTRAINT jobs_pkey, ADD CONSTRAINT jobs_uuid_key UNIQUE (uuid),
                     ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);
ALTER TABLE pgq.jobs ALTER COLUMN uuid SET DEFAULT gen_random_uuid();
DROP FUNCTION pgq._uuid7();
-- The functions replaced above keep their 00003 bodies (same behaviour, lookups by uuid);
-- a down migration past 00001 drops them.
