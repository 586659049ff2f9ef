-- pgq: the job queue's state machine. Every state change of a job is one call of a
-- function in this file; the Go worker only calls them. Read a function's header
-- comment (or `\df+ pgq.*` in psql) for its contract.
--
-- Job states, as rows:
--   waiting   pgq.jobs row, reserved_at IS NULL (ready once available_at <= now())
--   reserved  pgq.jobs row, reserved_at/reserved_until/lease_token set
--   finished  row gone from pgq.jobs; pgq.attempts keeps the history (succeeded)
--   failed    row gone from pgq.jobs; a pgq.failed_jobs row holds it (S17)
--
-- Custom SQLSTATEs: PQ001 lease lost (the token no longer holds the job),
-- 22023 bad argument, 42883 handler function missing.

-- +goose Up
CREATE SCHEMA pgq;

COMMENT ON SCHEMA pgq IS 'pgq job queue: tables, views and the functions that are its state machine';

CREATE TABLE pgq.queues (
    name        text PRIMARY KEY,
    retry_after int NOT NULL DEFAULT 90 CHECK (retry_after > 0),
    paused      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.queues IS 'Queues. retry_after is the lease in seconds (S14); a queue with no row uses 90.';
COMMENT ON COLUMN pgq.queues.retry_after IS 'Seconds a reservation lasts without a heartbeat before the job is handed to another worker.';

INSERT INTO pgq.queues (name) VALUES ('default');

CREATE TABLE pgq.job_classes (
    name            text PRIMARY KEY,
    queue           text NOT NULL DEFAULT 'default',
    handler         text,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean NOT NULL DEFAULT false,
    retry_for       interval,
    -- unique jobs (S21-S23): a lock per key from dispatch until processed or processing
    unique_for      interval,
    unique_until    text CHECK (unique_until IN ('processed', 'processing')),
    unique_by       text[],
    -- debounced jobs (S24): only the newest dispatch per key runs
    debounce_for    interval,
    debounce_by     text[],
    debounce_max_wait interval,
    -- middleware (S26-S29): evaluated in order by pgq.reserve before the handler runs
    middleware      jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.job_classes IS 'Job class declarations (pgq.define_job). Copied into each job at dispatch (S1).';

CREATE TABLE pgq.jobs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid            uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    job             text NOT NULL,
    queue           text NOT NULL,
    payload         jsonb NOT NULL,
    priority        int NOT NULL DEFAULT 0,
    -- settings frozen at dispatch (S1); NULL tries/backoff/timeout mean the worker's defaults
    handler         text,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean NOT NULL DEFAULT false,
    retry_until     timestamptz,
    unique_key      text,
    unique_token    uuid,
    unique_until    text,
    debounce_key    text,
    debounce_token  uuid,
    middleware      jsonb,
    -- progress
    attempts        int NOT NULL DEFAULT 0,
    exceptions      int NOT NULL DEFAULT 0,
    lease_expiries  int NOT NULL DEFAULT 0,
    last_exception  text,
    last_exception_attempt int,
    turn_aways      jsonb NOT NULL DEFAULT '{}',
    available_at    timestamptz NOT NULL DEFAULT now(),
    wait_reason     text NOT NULL DEFAULT 'dispatched'
        CHECK (wait_reason IN ('dispatched', 'backoff', 'released', 'turned_away', 'lease_expired', 'run_now', 'retried')),
    -- reservation (NULL while waiting)
    reserved_at     timestamptz,
    reserved_until  timestamptz,
    reserved_by     text,
    lease_token     uuid,
    started_at      timestamptz,
    overlap_keys    text[],
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- Every reservation and completion leaves dead index entries at the head of the reserve
-- index (no update of a job can be HOT: it changes indexed columns). Vacuum this table
-- by row count, not by a fraction of its size, and without throttling.
ALTER TABLE pgq.jobs SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
                          autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
                          autovacuum_vacuum_cost_delay = 0);

COMMENT ON TABLE pgq.jobs IS 'Live jobs: waiting (reserved_at IS NULL) or reserved by a worker under a lease.';
COMMENT ON COLUMN pgq.jobs.wait_reason IS 'Why a waiting job waits: dispatched (delay), backoff (after an exception), released (manual or shutdown), turned_away (middleware), lease_expired, run_now, retried (from failed_jobs).';
COMMENT ON COLUMN pgq.jobs.turn_aways IS 'Turn-aways so far by middleware name, e.g. {"without_overlapping": 2}; the S12 failure text reports them.';
COMMENT ON COLUMN pgq.jobs.overlap_keys IS 'Overlap keys whose advisory locks the reserving worker''s session holds for this attempt.';
COMMENT ON COLUMN pgq.jobs.unique_token IS 'Owner token of this job''s unique lock: every release deletes the lock only if it still matches (S22).';
COMMENT ON COLUMN pgq.jobs.debounce_token IS 'This dispatch''s debounce token: the job runs only while it is the key''s current token (S24).';
COMMENT ON COLUMN pgq.jobs.lease_token IS 'Fresh on every reservation; complete, fail, release and heartbeat must present it (S15).';

-- The reserve path: waiting jobs of one queue in priority, then FIFO order.
CREATE INDEX jobs_reserve_idx ON pgq.jobs (queue, priority DESC, available_at, id)
    WHERE reserved_at IS NULL;
-- The lease sweep: reserved jobs by lease end.
CREATE INDEX jobs_lease_idx ON pgq.jobs (reserved_until)
    WHERE reserved_until IS NOT NULL;

CREATE TABLE pgq.attempts (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_uuid       uuid NOT NULL,
    job            text NOT NULL,
    queue          text NOT NULL,
    attempt        int NOT NULL,
    worker         text,
    lease_token    uuid,
    reserved_at    timestamptz,
    started_at     timestamptz,
    finished_at    timestamptz NOT NULL,
    outcome        text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'released', 'turned_away',
                       'timed_out', 'lease_expired', 'debounced', 'exhausted')),
    middleware     text,
    exception      text,
    delay          int,
    final          boolean NOT NULL DEFAULT false,
    rejected_calls text[]
);

COMMENT ON TABLE pgq.attempts IS 'Attempt history (S19): one row per pickup of a job. Append-only; pruned by pgq.prune.';
COMMENT ON COLUMN pgq.attempts.started_at IS 'When the handler started; NULL when it never ran.';
COMMENT ON COLUMN pgq.attempts.delay IS 'Seconds the job was sent back to wait after this attempt (backoff or release); NULL when it did not go back.';
COMMENT ON COLUMN pgq.attempts.final IS 'True when this attempt ended the job for good (it went to pgq.failed_jobs).';
COMMENT ON COLUMN pgq.attempts.rejected_calls IS 'Calls made with this attempt''s lease token after the lease was lost (S15 fencing).';

CREATE INDEX attempts_job_uuid_idx ON pgq.attempts (job_uuid);

CREATE TABLE pgq.failed_jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid        uuid NOT NULL UNIQUE,
    connection  text NOT NULL DEFAULT 'pgq',
    queue       text NOT NULL,
    payload     jsonb NOT NULL,
    exception   text NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now(),
    job         text NOT NULL,
    attempts    int NOT NULL,
    -- what retry_failed needs to put the job back as it was dispatched
    priority        int NOT NULL DEFAULT 0,
    handler         text,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean NOT NULL DEFAULT false,
    retry_until     timestamptz,
    unique_key      text,
    unique_token    uuid,
    unique_until    text,
    debounce_key    text,
    debounce_token  uuid,
    middleware      jsonb,
    dispatched_at   timestamptz NOT NULL
);

COMMENT ON TABLE pgq.failed_jobs IS 'Jobs that failed for good (S17), with Laravel''s columns plus job name and attempts used.';

CREATE INDEX failed_jobs_failed_at_idx ON pgq.failed_jobs (failed_at);

CREATE TABLE pgq.unique_locks (
    key        text PRIMARY KEY,
    owner      uuid NOT NULL,
    job_uuid   uuid NOT NULL,
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.unique_locks IS 'Unique-job locks (S21), written in the dispatching transaction: a rolled-back dispatch leaves none. expires_at NULL: held until released.';

CREATE TABLE pgq.debounce_tokens (
    key              text PRIMARY KEY,
    token            uuid NOT NULL,
    job_uuid         uuid NOT NULL,
    burst_started_at timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pgq.rate_limits (
    name       text PRIMARY KEY,
    max        int NOT NULL CHECK (max > 0),
    per        interval NOT NULL CHECK (per > interval '0'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.rate_limits IS 'Named rate limits (pgq.define_limit): max hits per window, one budget shared by every worker (S28).';

CREATE TABLE pgq.rate_limit_windows (
    limit_name   text NOT NULL REFERENCES pgq.rate_limits (name) ON DELETE CASCADE,
    key          text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         int NOT NULL,
    PRIMARY KEY (limit_name, key)
);

COMMENT ON TABLE pgq.rate_limit_windows IS 'The current fixed window of each rate limit key: hits counted under the row lock, so the budget is exact under concurrency.';

CREATE TABLE pgq.circuits (
    key            text PRIMARY KEY,
    failures       int NOT NULL,
    window_start   timestamptz NOT NULL,
    decay          int NOT NULL,
    max_exceptions int NOT NULL,
    last_exception text,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.circuits IS 'Circuit breakers of throttles_exceptions (S29): exceptions counted per key within decay seconds; open at max_exceptions; a success deletes the row.';

CREATE TABLE pgq.overlap_locks (
    key          text PRIMARY KEY,
    lock_id      bigint NOT NULL,
    job_uuid     uuid NOT NULL,
    worker       text,
    pid          int NOT NULL,
    since        timestamptz NOT NULL,
    expire_after int
);

COMMENT ON TABLE pgq.overlap_locks IS 'Who took each without_overlapping advisory lock (S26). The lock itself is a session advisory lock; pgq.locks joins pg_locks to tell whether it is still held.';

COMMENT ON TABLE pgq.debounce_tokens IS 'The current debounce token per key (S24): only the job carrying it runs. burst_started_at bounds the wait with debounce_max_wait.';

-- +goose StatementBegin
-- pgq._check_settings: the shared guard of define_job and dispatch (S4). Raises 22023
-- naming the bad value; returns nothing.
CREATE FUNCTION pgq._check_settings(
    p_tries int, p_backoff int[], p_max_exceptions int, p_timeout int, p_priority int DEFAULT 0
) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_tries < 0 THEN
        RAISE EXCEPTION 'pgq: tries must be >= 0 (0 means unlimited), got %', p_tries
            USING ERRCODE = '22023';
    END IF;
    IF p_backoff IS NOT NULL THEN
        IF cardinality(p_backoff) = 0 THEN
            RAISE EXCEPTION 'pgq: backoff must have at least one entry, got %', p_backoff
                USING ERRCODE = '22023';
        END IF;
        IF array_position(p_backoff, NULL) IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(p_backoff) b WHERE b < 0) THEN
            RAISE EXCEPTION 'pgq: backoff entries must be seconds >= 0, got %', p_backoff
                USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_max_exceptions < 1 THEN
        RAISE EXCEPTION 'pgq: max_exceptions must be >= 1, got %', p_max_exceptions
            USING ERRCODE = '22023';
    END IF;
    IF p_timeout < 0 THEN
        RAISE EXCEPTION 'pgq: timeout must be seconds >= 0, got %', p_timeout
            USING ERRCODE = '22023';
    END IF;
    IF p_priority IS NULL THEN
        RAISE EXCEPTION 'pgq: priority must not be NULL' USING ERRCODE = '22023';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._check_name: queue and job names are 1-100 characters of letters, digits and
-- _ . : - / (S4). Raises 22023.
CREATE FUNCTION pgq._check_name(p_kind text, p_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9_][A-Za-z0-9_.:/\\-]{0,99}$' THEN
        RAISE EXCEPTION 'pgq: invalid % name %: use 1-100 letters, digits, _ . : / - (starting with a letter, digit or _)',
            p_kind, coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = '22023';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._handler_proc: resolves a SQL handler name to its function taking one jsonb
-- argument, or NULL when there is none.
CREATE FUNCTION pgq._handler_proc(p_handler text) RETURNS regprocedure
LANGUAGE sql STABLE AS $$
    SELECT to_regprocedure(p_handler || '(jsonb)');
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._check_unique_debounce: the guard of the unique and debounce settings (S25: they
-- exclude each other). Raises 22023.
CREATE FUNCTION pgq._check_unique_debounce(
    p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text,
    p_debounce_for interval, p_debounce_max_wait interval
) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_unique AND p_debounce THEN
        RAISE EXCEPTION 'pgq: a job cannot be both unique and debounced: give unique_* or debounce_* settings, not both'
            USING ERRCODE = '22023';
    END IF;
    IF p_unique_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: unique_for must be positive, got %', p_unique_for USING ERRCODE = '22023';
    END IF;
    IF p_unique_until NOT IN ('processed', 'processing') THEN
        RAISE EXCEPTION 'pgq: unique_until must be processed or processing, got %', quote_literal(p_unique_until)
            USING ERRCODE = '22023';
    END IF;
    IF p_debounce_for < interval '0' THEN
        RAISE EXCEPTION 'pgq: debounce_for must not be negative, got %', p_debounce_for USING ERRCODE = '22023';
    END IF;
    IF p_debounce_max_wait <= interval '0' THEN
        RAISE EXCEPTION 'pgq: debounce_max_wait must be positive, got %', p_debounce_max_wait USING ERRCODE = '22023';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._key: the unique or debounce key of one dispatch, scoped to the job name:
-- job:explicit-key, or job:[values of the payload fields named by p_by], or the job name
-- alone. Raises 22023 when the payload lacks a field of p_by.
CREATE FUNCTION pgq._key(p_job text, p_explicit text, p_by text[], p_payload jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_field text;
BEGIN
    IF p_explicit IS NOT NULL THEN
        RETURN p_job || ':' || p_explicit;
    END IF;
    IF p_by IS NULL THEN
        RETURN p_job;
    END IF;
    FOREACH v_field IN ARRAY p_by LOOP
        IF NOT (p_payload ? v_field) THEN
            RAISE EXCEPTION 'pgq: payload of % lacks field % needed for its key (by %)', p_job, quote_literal(v_field), p_by
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
    RETURN p_job || ':' || (SELECT jsonb_agg(p_payload -> f ORDER BY n) FROM unnest(p_by) WITH ORDINALITY AS b(f, n))::text;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._texts: a jsonb array of strings as text[] (NULL for NULL).
CREATE FUNCTION pgq._texts(p jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(p)) END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._check_middleware: middleware is a JSON array of one-key objects, evaluated in
-- order before the handler (S26-S29):
--   {"without_overlapping": {"key": "k" | "by": ["field"], "release_after": 0, "expire_after": 30,
--                            "dont_release": false, "shared": false}}
--   {"rate_limited": {"limit": "name", "by": ["field"]}}
--   {"throttles_exceptions": {"max_exceptions": 10, "decay": 600, "backoff": 0, "key": "k" | "by": [...],
--                             "when": "regex on the exception text"}}
-- Raises 22023 naming the bad entry.
CREATE FUNCTION pgq._check_middleware(p_middleware jsonb) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_mw   jsonb;
    v_name text;
    v_cfg  jsonb;
    v_bad  text;
BEGIN
    IF p_middleware IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_middleware) <> 'array' THEN
        RAISE EXCEPTION 'pgq: middleware must be a JSON array, got %', p_middleware USING ERRCODE = '22023';
    END IF;
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_middleware) m LOOP
        IF jsonb_typeof(v_mw) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v_mw)) <> 1 THEN
            RAISE EXCEPTION 'pgq: each middleware must be an object with one key, got %', v_mw USING ERRCODE = '22023';
        END IF;
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        IF jsonb_typeof(v_cfg) <> 'object' THEN
            RAISE EXCEPTION 'pgq: settings of % must be an object, got %', v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_cfg) k
        WHERE k <> ALL (CASE v_name
            WHEN 'without_overlapping' THEN ARRAY['key', 'by', 'release_after', 'expire_after', 'dont_release', 'shared']
            WHEN 'rate_limited' THEN ARRAY['limit', 'by']
            WHEN 'throttles_exceptions' THEN ARRAY['max_exceptions', 'decay', 'backoff', 'key', 'by', 'when']
            ELSE NULL END);
        IF v_name NOT IN ('without_overlapping', 'rate_limited', 'throttles_exceptions') THEN
            RAISE EXCEPTION 'pgq: unknown middleware %: use without_overlapping, rate_limited or throttles_exceptions',
                quote_literal(v_name) USING ERRCODE = '22023';
        END IF;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: unknown setting(s) % of %', v_bad, v_name USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND (jsonb_typeof(v_cfg -> 'by') <> 'array' OR jsonb_array_length(v_cfg -> 'by') = 0) THEN
            RAISE EXCEPTION 'pgq: % "by" must be a non-empty array of payload field names, got %', v_name, v_cfg -> 'by'
                USING ERRCODE = '22023';
        END IF;
        IF EXISTS (SELECT FROM jsonb_each(v_cfg) e
                   WHERE e.key IN ('release_after', 'expire_after', 'max_exceptions', 'decay', 'backoff')
                     AND (jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 0 OR (e.value)::numeric % 1 <> 0
                          OR (e.value)::numeric > 2147483647
                          OR (e.key IN ('expire_after', 'max_exceptions', 'decay') AND (e.value)::numeric < 1))) THEN
            RAISE EXCEPTION 'pgq: % has a bad number in %: release_after and backoff are whole seconds >= 0, expire_after, decay and max_exceptions whole numbers >= 1',
                v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'key' AND jsonb_typeof(v_cfg -> 'key') <> 'string' THEN
            RAISE EXCEPTION 'pgq: % "key" must be a string, got %', v_name, v_cfg -> 'key' USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND EXISTS (SELECT FROM jsonb_array_elements(v_cfg -> 'by') f WHERE jsonb_typeof(f) <> 'string') THEN
            RAISE EXCEPTION 'pgq: % "by" must name payload fields as strings, got %', v_name, v_cfg -> 'by' USING ERRCODE = '22023';
        END IF;
        IF v_name = 'rate_limited' AND NOT EXISTS (SELECT FROM pgq.rate_limits l WHERE l.name = v_cfg ->> 'limit') THEN
            RAISE EXCEPTION 'pgq: rate_limited names limit %, which is not defined (pgq.define_limit)',
                coalesce(quote_literal(v_cfg ->> 'limit'), 'NULL') USING ERRCODE = '22023';
        END IF;
        IF v_name = 'throttles_exceptions' AND v_cfg ? 'when' THEN
            BEGIN
                PERFORM '' ~ (v_cfg ->> 'when');
            EXCEPTION WHEN invalid_regular_expression THEN
                RAISE EXCEPTION 'pgq: throttles_exceptions "when" is not a valid regular expression: %', v_cfg ->> 'when'
                    USING ERRCODE = '22023';
            END;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._middleware: the settings of the first middleware of that name, or NULL.
CREATE FUNCTION pgq._middleware(p_middleware jsonb, p_name text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT m -> p_name FROM jsonb_array_elements(p_middleware) m WHERE m ? p_name LIMIT 1;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._circuit_key: a throttles_exceptions circuit's key: key or by fields, scoped to the
-- job name; the job name by default.
CREATE FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT pgq._key(p_job, p_cfg ->> 'key', pgq._texts(p_cfg -> 'by'), p_payload);
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._overlap_lock_id: the advisory lock id of an overlap key.
CREATE FUNCTION pgq._overlap_lock_id(p_key text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('pgq.overlap:' || p_key, 0);
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._lock_held: whether backend p_pid holds the advisory lock p_lock (from pg_locks).
CREATE FUNCTION pgq._lock_held(p_pid int, p_lock bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.pid = p_pid AND l.granted AND l.objsubid = 1
          AND l.classid::bigint = ((p_lock >> 32) & 4294967295)
          AND l.objid::bigint = (p_lock & 4294967295));
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.unlock_overlap: gives back the overlap locks this session took for a job, when its
-- handler has ended (S26). Call it on the session that reserved the job. Returns how
-- many locks were released.
CREATE FUNCTION pgq.unlock_overlap(uuid uuid, keys text[]) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key   text;
    v_count int := 0;
BEGIN
    FOREACH v_key IN ARRAY coalesce(unlock_overlap.keys, '{}') LOOP
        -- Owner-checked: after expire_after freed this job's lock, another job on the
        -- same session may hold the key now; only the job that owns the row unlocks.
        DELETE FROM pgq.overlap_locks o
        WHERE o.key = v_key AND o.job_uuid = unlock_overlap.uuid AND o.pid = pg_backend_pid();
        IF FOUND AND pg_advisory_unlock(pgq._overlap_lock_id(v_key)) THEN
            v_count := v_count + 1;
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.unlock_overlap(uuid, text[]) IS
    'Worker protocol: releases the without_overlapping advisory locks a job held, on the session that reserved it (S26).';

-- +goose StatementBegin
-- pgq.expire_overlap: releases the overlap locks this session has held longer than their
-- expire_after (S27: expire_after caps how long one holder keeps the lock, even while its
-- handler still runs). Call it on the worker's session now and then; returns the keys.
CREATE FUNCTION pgq.expire_overlap() RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_lock pgq.overlap_locks;
BEGIN
    FOR v_lock IN
        SELECT * FROM pgq.overlap_locks o
        WHERE o.pid = pg_backend_pid()
          AND o.since + make_interval(secs => o.expire_after) <= now()
    LOOP
        PERFORM pgq.unlock_overlap(v_lock.job_uuid, ARRAY[v_lock.key]);
        RETURN NEXT v_lock.key;
    END LOOP;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.expire_overlap() IS
    'Worker protocol: releases this session''s overlap locks held past their expire_after; returns their keys.';

-- +goose StatementBegin
-- pgq._admit: runs a reserved job's middleware in order, before its handler (S26-S29).
-- Returns turned_by NULL and the overlap keys now held by this session when every
-- middleware admits the job; otherwise the middleware that turned it away, a note, the
-- delay and whether to drop it (dont_release), having given back any lock an earlier
-- middleware took. Never raises for a job's settings: a broken job must not stop reserve.
CREATE FUNCTION pgq._admit(
    p_job pgq.jobs, p_now timestamptz,
    OUT turned_by text, OUT note text, OUT delay int, OUT drop boolean, OUT held text[], OUT error text
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_mw      jsonb;
    v_name    text;
    v_cfg     jsonb;
    v_key     text;
    v_lock    bigint;
    v_limit   pgq.rate_limits;
    v_window  pgq.rate_limit_windows;
    v_circuit pgq.circuits;
BEGIN
    held := '{}';
    drop := false;
    BEGIN
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_job.middleware) m LOOP
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        IF v_name = 'without_overlapping' THEN
            v_key := pgq._key(CASE WHEN (v_cfg ->> 'shared')::boolean THEN 'shared' ELSE p_job.job END,
                              v_cfg ->> 'key', pgq._texts(v_cfg -> 'by'), p_job.payload);
            v_lock := pgq._overlap_lock_id(v_key);
            -- Session advisory locks are re-entrant: without the first test one worker could
            -- run two jobs with the same key. The row this session wrote when it took the
            -- lock says so by primary key; pg_locks (a scan of every lock) only confirms it,
            -- in case the row is stale from a dead backend whose pid was reused.
            IF NOT (EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = v_key AND o.pid = pg_backend_pid())
                    AND pgq._lock_held(pg_backend_pid(), v_lock))
               AND pg_try_advisory_lock(v_lock) THEN
                held := held || v_key;
                INSERT INTO pgq.overlap_locks AS o (key, lock_id, job_uuid, worker, pid, since, expire_after)
                VALUES (v_key, v_lock, p_job.uuid, p_job.reserved_by, pg_backend_pid(), p_now, (v_cfg ->> 'expire_after')::int)
                ON CONFLICT (key) DO UPDATE
                    SET lock_id = EXCLUDED.lock_id, job_uuid = EXCLUDED.job_uuid, worker = EXCLUDED.worker,
                        pid = EXCLUDED.pid, since = EXCLUDED.since, expire_after = EXCLUDED.expire_after;
                CONTINUE;
            END IF;
            turned_by := v_name;
            drop := coalesce((v_cfg ->> 'dont_release')::boolean, false);
            delay := coalesce((v_cfg ->> 'release_after')::int, 0);
            note := format('turned away by without_overlapping (key %s), %s', v_key,
                           CASE WHEN drop THEN 'deleted (dont_release)' ELSE format('released for %ss', delay) END);
        ELSIF v_name = 'rate_limited' THEN
            SELECT * INTO v_limit FROM pgq.rate_limits l WHERE l.name = v_cfg ->> 'limit';
            CONTINUE WHEN NOT FOUND;  -- the limit was dropped after dispatch: no budget to keep
            v_key := pgq._key(v_limit.name, NULL, pgq._texts(v_cfg -> 'by'), p_job.payload);
            -- Fixed window, exact under concurrency: the hit is counted under the row lock
            -- and the WHERE reads only that row.
            INSERT INTO pgq.rate_limit_windows AS w (limit_name, key, window_start, hits)
            VALUES (v_limit.name, v_key, p_now, 1)
            ON CONFLICT (limit_name, key) DO UPDATE
                SET window_start = CASE WHEN w.window_start + v_limit.per <= p_now THEN p_now ELSE w.window_start END,
                    hits = CASE WHEN w.window_start + v_limit.per <= p_now THEN 1 ELSE w.hits + 1 END
                WHERE w.window_start + v_limit.per <= p_now OR w.hits < v_limit.max
            RETURNING * INTO v_window;
            CONTINUE WHEN FOUND;
            SELECT * INTO v_window FROM pgq.rate_limit_windows w WHERE w.limit_name = v_limit.name AND w.key = v_key;
            turned_by := v_name;
            delay := ceil(extract(epoch FROM v_window.window_start + v_limit.per - p_now))::int + 3;
            note := format('turned away by rate_limited (limit %s, key %s: %s per %s used), released for %ss',
                           v_limit.name, v_key, v_window.hits, v_limit.per, delay);
        ELSIF v_name = 'throttles_exceptions' THEN
            SELECT * INTO v_circuit FROM pgq.circuits c WHERE c.key = pgq._circuit_key(p_job.job, p_job.payload, v_cfg);
            CONTINUE WHEN NOT FOUND OR v_circuit.failures < v_circuit.max_exceptions
                       OR v_circuit.window_start + make_interval(secs => v_circuit.decay) <= p_now;
            turned_by := v_name;
            delay := ceil(extract(epoch FROM v_circuit.window_start + make_interval(secs => v_circuit.decay) - p_now))::int + 3;
            note := format('turned away by throttles_exceptions (circuit %s open: %s exceptions within %ss), released for %ss',
                           v_circuit.key, v_circuit.failures, v_circuit.decay, delay);
        END IF;
        EXIT;  -- turned away
    END LOOP;
    EXCEPTION WHEN OTHERS THEN
        -- Dispatch validates middleware, so this is a job that cannot be admitted at all
        -- (a class changed under it, a limit dropped mid-call...). It must not stop the
        -- queue: give back the locks this call took (session advisory locks survive the
        -- rollback of this block) and fail this job alone.
        PERFORM pg_advisory_unlock(pgq._overlap_lock_id(k)) FROM unnest(held) k;
        held := '{}';
        turned_by := NULL;
        error := format('middleware could not be evaluated: %s (SQLSTATE %s)', SQLERRM, SQLSTATE);
        RETURN;
    END;
    IF turned_by IS NOT NULL AND cardinality(held) > 0 THEN
        PERFORM pgq.unlock_overlap(p_job.uuid, held);
        held := '{}';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.define_limit: creates or updates a named rate limit of max hits per window,
-- shared by every worker (S28).
CREATE FUNCTION pgq.define_limit(name text, max int, per interval) RETURNS pgq.rate_limits
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_limit pgq.rate_limits;
BEGIN
    PERFORM pgq._check_name('limit', define_limit.name);
    IF define_limit.max IS NULL OR define_limit.max < 1 THEN
        RAISE EXCEPTION 'pgq: limit max must be >= 1, got %', define_limit.max USING ERRCODE = '22023';
    END IF;
    IF define_limit.per IS NULL OR define_limit.per <= interval '0' THEN
        RAISE EXCEPTION 'pgq: limit per must be a positive interval, got %', define_limit.per USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.rate_limits AS l (name, max, per) VALUES (define_limit.name, define_limit.max, define_limit.per)
    ON CONFLICT ON CONSTRAINT rate_limits_pkey DO UPDATE SET max = EXCLUDED.max, per = EXCLUDED.per, updated_at = now()
    RETURNING * INTO v_limit;
    RETURN v_limit;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.define_limit(text, int, interval) IS
    'Creates or updates a named rate limit: max hits per interval, one budget for every worker (S28).';

-- +goose StatementBegin
-- pgq._release_unique: deletes a unique lock only if the token still owns it (S22).
CREATE FUNCTION pgq._release_unique(p_key text, p_token uuid) RETURNS void
LANGUAGE sql VOLATILE AS $$
    DELETE FROM pgq.unique_locks u WHERE u.key = p_key AND u.owner = p_token;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.define_queue: creates or updates a queue. retry_after is the lease in seconds.
CREATE FUNCTION pgq.define_queue(name text, retry_after int DEFAULT 90, paused boolean DEFAULT false)
RETURNS pgq.queues
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_queue pgq.queues;
BEGIN
    PERFORM pgq._check_name('queue', define_queue.name);
    IF define_queue.retry_after IS NULL OR define_queue.retry_after < 1 THEN
        RAISE EXCEPTION 'pgq: retry_after must be seconds >= 1, got %', define_queue.retry_after
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.queues AS q (name, retry_after, paused)
    VALUES (define_queue.name, define_queue.retry_after, coalesce(define_queue.paused, false))
    ON CONFLICT ON CONSTRAINT queues_pkey DO UPDATE
        SET retry_after = EXCLUDED.retry_after, paused = EXCLUDED.paused, updated_at = now()
    RETURNING * INTO v_queue;
    RETURN v_queue;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.define_queue(text, int, boolean) IS
    'Creates or updates a queue: retry_after is its lease in seconds (default 90), paused stops reservations.';

-- +goose StatementBegin
-- pgq.define_job: upserts a job class. The whole declaration is replaced (a parameter
-- left out becomes NULL/default). Jobs already dispatched keep their frozen settings (S1).
-- handler names a SQL function taking one jsonb argument; it must exist when defined.
CREATE FUNCTION pgq.define_job(
    name            text,
    queue           text DEFAULT 'default',
    handler         text DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT false,
    retry_for       interval DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    unique_by       text[] DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_by     text[] DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL
) RETURNS pgq.job_classes
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_class pgq.job_classes;
BEGIN
    PERFORM pgq._check_name('job', define_job.name);
    PERFORM pgq._check_name('queue', define_job.queue);
    PERFORM pgq._check_settings(define_job.tries, define_job.backoff, define_job.max_exceptions, define_job.timeout);
    IF define_job.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', define_job.retry_for USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_unique_debounce(
        define_job.unique_for IS NOT NULL OR define_job.unique_until IS NOT NULL OR define_job.unique_by IS NOT NULL,
        define_job.debounce_for IS NOT NULL OR define_job.debounce_by IS NOT NULL OR define_job.debounce_max_wait IS NOT NULL,
        define_job.unique_for, define_job.unique_until, define_job.debounce_for, define_job.debounce_max_wait);
    PERFORM pgq._check_middleware(define_job.middleware);
    IF define_job.handler IS NOT NULL AND pgq._handler_proc(define_job.handler) IS NULL THEN
        RAISE EXCEPTION 'pgq: handler function %(jsonb) does not exist', define_job.handler
            USING ERRCODE = '42883',
                  HINT = 'Create the function first: CREATE FUNCTION ' || define_job.handler || '(payload jsonb) RETURNS void ...';
    END IF;
    INSERT INTO pgq.job_classes AS c
        (name, queue, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for,
         unique_for, unique_until, unique_by, debounce_for, debounce_by, debounce_max_wait, middleware)
    VALUES (define_job.name, define_job.queue, define_job.handler, define_job.tries, define_job.backoff,
            define_job.max_exceptions, define_job.timeout, coalesce(define_job.fail_on_timeout, false),
            define_job.retry_for, define_job.unique_for,
            CASE WHEN define_job.unique_for IS NOT NULL OR define_job.unique_by IS NOT NULL
                 THEN coalesce(define_job.unique_until, 'processed') END,
            define_job.unique_by, define_job.debounce_for, define_job.debounce_by, define_job.debounce_max_wait,
            define_job.middleware)
    ON CONFLICT ON CONSTRAINT job_classes_pkey DO UPDATE
        SET queue = EXCLUDED.queue, handler = EXCLUDED.handler, tries = EXCLUDED.tries,
            backoff = EXCLUDED.backoff, max_exceptions = EXCLUDED.max_exceptions,
            timeout = EXCLUDED.timeout, fail_on_timeout = EXCLUDED.fail_on_timeout,
            retry_for = EXCLUDED.retry_for, unique_for = EXCLUDED.unique_for,
            unique_until = EXCLUDED.unique_until, unique_by = EXCLUDED.unique_by,
            debounce_for = EXCLUDED.debounce_for, debounce_by = EXCLUDED.debounce_by,
            debounce_max_wait = EXCLUDED.debounce_max_wait, middleware = EXCLUDED.middleware, updated_at = now()
    RETURNING * INTO v_class;
    RETURN v_class;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb) IS
    'Upserts a job class: queue, SQL handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for, unique_*, debounce_* and middleware. New dispatches copy it (S1).';

-- +goose StatementBegin
-- pgq.dispatch_many: queues one job per payload, all with the same job name and
-- options, in the caller's transaction (S2). Per-dispatch options override the job
-- class; a job with no class is allowed (worker defaults apply). Workers of the queue
-- are woken by a NOTIFY sent on commit, unless the jobs are delayed.
-- Unique jobs (S21): each takes its lock row in this transaction; a job whose key is
-- locked by a live holder is dropped and its uuid is NULL in the result. Debounced jobs
-- (S24): each writes a new current token for its key and waits debounce_for (capped by
-- debounce_max_wait after the first dispatch of the burst). Both at once: 22023 (S25).
-- State change: (nothing) -> waiting. Raises 22023 for bad input, writing nothing (S4).
-- Returns one uuid (or NULL) per payload, in payload order.
CREATE FUNCTION pgq.dispatch_many(
    job             text,
    payloads        jsonb[],
    queue           text DEFAULT NULL,
    delay           interval DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    retry_until     timestamptz DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    priority        int DEFAULT 0,
    unique_key      text DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    debounce_key    text DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL,
    retry_for       interval DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_class     pgq.job_classes;
    v_queue     text;
    v_job       pgq.jobs;
    v_unique    boolean;
    v_debounce  boolean;
    v_payload   jsonb;
    v_burst     timestamptz;
    v_unique_for interval;
    v_debounce_for interval;
    v_max_wait  interval;
BEGIN
    PERFORM pgq._check_name('job', dispatch_many.job);
    SELECT * INTO v_class FROM pgq.job_classes c WHERE c.name = dispatch_many.job;
    v_queue := coalesce(dispatch_many.queue, v_class.queue, 'default');
    PERFORM pgq._check_name('queue', v_queue);
    PERFORM pgq._check_settings(dispatch_many.tries, dispatch_many.backoff, dispatch_many.max_exceptions,
                                dispatch_many.timeout, dispatch_many.priority);
    IF dispatch_many.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', dispatch_many.retry_for USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.retry_until IS NOT NULL AND dispatch_many.retry_for IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: give retry_until or retry_for, not both' USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.delay < interval '0' THEN
        RAISE EXCEPTION 'pgq: delay must not be negative, got %', dispatch_many.delay USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.payloads IS NULL OR array_position(dispatch_many.payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: payload must be JSON, got NULL' USING ERRCODE = '22023';
    END IF;
    v_unique := dispatch_many.unique_key IS NOT NULL OR dispatch_many.unique_for IS NOT NULL
             OR dispatch_many.unique_until IS NOT NULL OR v_class.unique_until IS NOT NULL;
    v_debounce := dispatch_many.debounce_key IS NOT NULL OR dispatch_many.debounce_for IS NOT NULL
               OR dispatch_many.debounce_max_wait IS NOT NULL
               OR v_class.debounce_for IS NOT NULL OR v_class.debounce_by IS NOT NULL;
    PERFORM pgq._check_unique_debounce(v_unique, v_debounce, dispatch_many.unique_for, dispatch_many.unique_until,
                                       dispatch_many.debounce_for, dispatch_many.debounce_max_wait);
    PERFORM pgq._check_middleware(dispatch_many.middleware);

    -- The frozen settings (S1), shared by every payload.
    v_job.job := dispatch_many.job;
    v_job.queue := v_queue;
    v_job.priority := dispatch_many.priority;
    v_job.handler := v_class.handler;
    v_job.tries := coalesce(dispatch_many.tries, v_class.tries);
    v_job.backoff := coalesce(dispatch_many.backoff, v_class.backoff);
    v_job.max_exceptions := coalesce(dispatch_many.max_exceptions, v_class.max_exceptions);
    v_job.timeout := coalesce(dispatch_many.timeout, v_class.timeout);
    v_job.fail_on_timeout := coalesce(dispatch_many.fail_on_timeout, v_class.fail_on_timeout, false);
    -- retry_for is turned into the retry_until timestamp here, by the database's clock (S1)
    v_job.retry_until := coalesce(dispatch_many.retry_until, now() + dispatch_many.retry_for, now() + v_class.retry_for);
    v_job.available_at := now() + coalesce(dispatch_many.delay, interval '0');
    v_job.middleware := coalesce(dispatch_many.middleware, v_class.middleware);
    -- Every "by" of the middleware must find its fields in every payload: a key that
    -- cannot be computed would otherwise only surface at reserve time.
    IF v_job.middleware IS NOT NULL THEN
        PERFORM pgq._key(dispatch_many.job, NULL, pgq._texts(m.value -> 'by'), p.payload)
        FROM jsonb_array_elements(v_job.middleware) mw, jsonb_each(mw) m, unnest(dispatch_many.payloads) p(payload)
        WHERE m.value ? 'by';
    END IF;

    IF NOT v_unique AND NOT v_debounce THEN
        RETURN QUERY
        INSERT INTO pgq.jobs AS j
            (job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, available_at, middleware)
        SELECT v_job.job, v_job.queue, p.payload, v_job.priority, v_job.handler, v_job.tries, v_job.backoff,
               v_job.max_exceptions, v_job.timeout, v_job.fail_on_timeout, v_job.retry_until, v_job.available_at,
               v_job.middleware
        FROM unnest(dispatch_many.payloads) WITH ORDINALITY AS p(payload, n)
        ORDER BY p.n
        RETURNING j.uuid;
    ELSE
        v_unique_for := coalesce(dispatch_many.unique_for, v_class.unique_for);
        v_debounce_for := coalesce(dispatch_many.debounce_for, v_class.debounce_for);
        v_max_wait := coalesce(dispatch_many.debounce_max_wait, v_class.debounce_max_wait);
        IF v_debounce AND v_debounce_for IS NULL THEN
            RAISE EXCEPTION 'pgq: a debounced dispatch of % needs debounce_for', dispatch_many.job USING ERRCODE = '22023';
        END IF;
        FOREACH v_payload IN ARRAY dispatch_many.payloads LOOP
            v_job.uuid := gen_random_uuid();
            v_job.payload := v_payload;
            IF v_unique THEN
                v_job.unique_key := pgq._key(dispatch_many.job, dispatch_many.unique_key, v_class.unique_by, v_payload);
                v_job.unique_token := gen_random_uuid();
                v_job.unique_until := coalesce(dispatch_many.unique_until, v_class.unique_until, 'processed');
                -- Take the lock, or take over one that expired. A concurrent dispatch of
                -- the same key waits here for this transaction, then sees its lock row.
                -- Hazard: the WHERE may only read the lock row itself. A subquery (say, "is
                -- the owner job gone?") reads this statement's snapshot, which cannot see
                -- the job the other transaction just committed, and lets duplicates in.
                INSERT INTO pgq.unique_locks AS u (key, owner, job_uuid, expires_at)
                VALUES (v_job.unique_key, v_job.unique_token, v_job.uuid, now() + v_unique_for)
                ON CONFLICT (key) DO UPDATE
                    SET owner = EXCLUDED.owner, job_uuid = EXCLUDED.job_uuid,
                        expires_at = EXCLUDED.expires_at, created_at = now()
                    WHERE u.expires_at <= now();
                IF NOT FOUND THEN
                    RETURN NEXT NULL;  -- dropped: a live holder has the key (S21)
                    CONTINUE;
                END IF;
            ELSE
                v_job.debounce_key := pgq._key(dispatch_many.job, dispatch_many.debounce_key, v_class.debounce_by, v_payload);
                v_job.debounce_token := gen_random_uuid();
                INSERT INTO pgq.debounce_tokens AS d (key, token, job_uuid, burst_started_at)
                VALUES (v_job.debounce_key, v_job.debounce_token, v_job.uuid, now())
                ON CONFLICT (key) DO UPDATE
                    SET token = EXCLUDED.token, job_uuid = EXCLUDED.job_uuid, updated_at = now(),
                        burst_started_at = coalesce(d.burst_started_at, now())
                RETURNING d.burst_started_at INTO v_burst;
                v_job.available_at := greatest(now() + coalesce(dispatch_many.delay, interval '0'),
                                               least(now() + v_debounce_for, v_burst + v_max_wait));
            END IF;
            INSERT INTO pgq.jobs
                (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
                 fail_on_timeout, retry_until, available_at, unique_key, unique_token, unique_until,
                 debounce_key, debounce_token, middleware)
            VALUES (v_job.uuid, v_job.job, v_job.queue, v_job.payload, v_job.priority, v_job.handler, v_job.tries,
                    v_job.backoff, v_job.max_exceptions, v_job.timeout, v_job.fail_on_timeout, v_job.retry_until,
                    v_job.available_at, v_job.unique_key, v_job.unique_token, v_job.unique_until,
                    v_job.debounce_key, v_job.debounce_token, v_job.middleware);
            RETURN NEXT v_job.uuid;
        END LOOP;
    END IF;

    IF coalesce(dispatch_many.delay, interval '0') = interval '0' AND NOT v_debounce THEN
        PERFORM pg_notify('pgq_jobs', v_queue);
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.dispatch_many(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval) IS
    'Queues one job per payload with shared options, in the caller''s transaction; returns their uuids in payload order (NULL for a unique duplicate dropped).';

-- +goose StatementBegin
-- pgq.dispatch: queues one job and returns its uuid, or NULL when a unique lock dropped
-- it. See pgq.dispatch_many.
CREATE FUNCTION pgq.dispatch(
    job             text,
    payload         jsonb DEFAULT '{}',
    queue           text DEFAULT NULL,
    delay           interval DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    retry_until     timestamptz DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    priority        int DEFAULT 0,
    unique_key      text DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    debounce_key    text DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL,
    retry_for       interval DEFAULT NULL
) RETURNS uuid
LANGUAGE sql VOLATILE AS $$
    SELECT pgq.dispatch_many(dispatch.job, ARRAY[dispatch.payload], dispatch.queue, dispatch.delay,
                             dispatch.tries, dispatch.backoff, dispatch.retry_until,
                             dispatch.max_exceptions, dispatch.timeout, dispatch.fail_on_timeout,
                             dispatch.priority, dispatch.unique_key, dispatch.unique_for, dispatch.unique_until,
                             dispatch.debounce_key, dispatch.debounce_for, dispatch.debounce_max_wait,
                             dispatch.middleware, dispatch.retry_for);
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.dispatch(text, jsonb, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval) IS
    'Queues one job in the caller''s transaction and returns its uuid (NULL: dropped as a unique duplicate). Options override the job class (S1).';

-- +goose StatementBegin
-- pgq._record: appends one attempt row for a job as it is now (S19).
CREATE FUNCTION pgq._record(
    p_job pgq.jobs, p_outcome text, p_now timestamptz,
    p_exception text DEFAULT NULL, p_delay int DEFAULT NULL, p_final boolean DEFAULT false,
    p_started boolean DEFAULT true
) RETURNS pgq.attempts
LANGUAGE sql VOLATILE AS $$
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at,
         finished_at, outcome, exception, delay, final)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, CASE WHEN p_started THEN p_job.started_at END, p_now, p_outcome,
            p_exception, p_delay, p_final)
    RETURNING *;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._bury: the job fails for good (S17): it leaves pgq.jobs, a pgq.failed_jobs row is
-- written and a job_failed event is sent on commit. State change: reserved -> failed.
CREATE FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.id = p_job.id;
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
-- pgq._exhausted_message: the S12 failure text for a job picked up after its last
-- attempt or deadline, with the last real exception and the lease expiries, so the
-- failed job says why it ran out.
CREATE FUNCTION pgq._exhausted_message(p_job pgq.jobs, p_now timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
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
                THEN format('; %s× lease expired (worker died or froze mid-job)', p_job.lease_expiries)
                ELSE '' END
    FROM turned;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._turn_away: a middleware sent the job back before its handler ran: the attempt is
-- recorded as turned_away with the middleware's name, and the job waits delay seconds
-- (no exception, no backoff), or with dont_release is deleted without a failure (S27).
CREATE FUNCTION pgq._turn_away(
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
        DELETE FROM pgq.jobs j WHERE j.id = p_job.id;
        PERFORM pgq._release_unique(p_job.unique_key, p_job.unique_token);
        DELETE FROM pgq.debounce_tokens d WHERE d.key = p_job.debounce_key AND d.token = p_job.debounce_token;
        RETURN;
    END IF;
    UPDATE pgq.jobs j
    SET available_at = p_now + make_interval(secs => p_delay), wait_reason = 'turned_away',
        turn_aways = jsonb_set(j.turn_aways, ARRAY[p_middleware], to_jsonb(coalesce((j.turn_aways ->> p_middleware)::int, 0) + 1)),
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.id = p_job.id;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq._needs_pickup_check: whether a just-reserved job must go through reserve's
-- per-row pickup checks (debounce, S12 exhausted, middleware, until-processing release);
-- the others take the set-based fast path.
CREATE FUNCTION pgq._needs_pickup_check(
    p_debounce_key text, p_middleware jsonb, p_unique_until text, p_retry_until timestamptz,
    p_tries int, p_attempts int, p_default_tries int, p_now timestamptz
) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_debounce_key IS NOT NULL
        OR p_middleware IS NOT NULL
        OR p_unique_until IS NOT DISTINCT FROM 'processing'
        OR (p_retry_until IS NOT NULL AND p_now > p_retry_until)
        OR (p_retry_until IS NULL AND coalesce(p_tries, p_default_tries) > 0
            AND p_attempts > coalesce(p_tries, p_default_tries));
$$;
-- +goose StatementEnd

CREATE VIEW pgq.reservations AS
SELECT j.*, NULL::text AS pickup, NULL::text AS pickup_note, NULL::text AS pickup_middleware
FROM pgq.jobs j
WHERE false;

COMMENT ON VIEW pgq.reservations IS 'The row type pgq.reserve returns (always empty itself): a job, plus for a job that will not run what happened at pickup.';

-- +goose StatementBegin
-- pgq._reported: a job as pgq.reserve reports it.
CREATE FUNCTION pgq._reported(p_job pgq.jobs, p_pickup text, p_note text, p_middleware text DEFAULT NULL)
RETURNS pgq.reservations
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_job).*, p_pickup, p_note, p_middleware;
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
CREATE FUNCTION pgq.reserve(
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
    v_batch pgq.jobs[];
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
        WHERE j.id = e.id
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
            -- id = ANY (ARRAY (...)): the shape whose generic plan is the good one (pkey
            -- lookups of the picked ids), so the plan is cached instead of re-planned on
            -- every call (force_generic_plan below); a join here plans as a hash join
            -- over the whole table once generic.
            WITH upd AS (
                UPDATE pgq.jobs j
                SET attempts = j.attempts + 1,
                    reserved_at = v_now,
                    reserved_until = v_now + make_interval(secs => v_lease),
                    reserved_by = reserve.worker,
                    lease_token = gen_random_uuid(),
                    started_at = v_now
                WHERE j.id = ANY (ARRAY (
                    SELECT p.id
                    FROM pgq.jobs p
                    WHERE p.queue = v_queue
                      AND p.reserved_at IS NULL
                      AND p.available_at <= v_now
                      AND p.id <> ALL (v_seen)
                    ORDER BY p.priority DESC, p.available_at, p.id
                    LIMIT v_want
                    FOR UPDATE SKIP LOCKED))
                RETURNING j.*
            )
            SELECT coalesce(array_agg(u), '{}') INTO v_batch FROM upd u;
            v_picked := cardinality(v_batch);

            -- Fast path, set-based: jobs no pickup check applies to (no debounce, no
            -- middleware, no until-processing lock, not exhausted) go out as they are.
            RETURN QUERY
                SELECT b.*, NULL::text, NULL::text, NULL::text
                FROM unnest(v_batch) b
                WHERE NOT pgq._needs_pickup_check(b.debounce_key, b.middleware, b.unique_until, b.retry_until,
                                                  b.tries, b.attempts, reserve.default_tries, v_now);
            GET DIAGNOSTICS v_fast = ROW_COUNT;
            v_left := v_left - v_fast;

            FOR v_job IN
                SELECT * FROM unnest(v_batch) b
                WHERE pgq._needs_pickup_check(b.debounce_key, b.middleware, b.unique_until, b.retry_until,
                                              b.tries, b.attempts, reserve.default_tries, v_now)
            LOOP
                -- Pickup check S24: a debounced job whose token is no longer its key's
                -- current one is deleted without running (first attempt and retries).
                IF v_job.debounce_key IS NOT NULL AND NOT EXISTS (
                    SELECT FROM pgq.debounce_tokens d WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token
                ) THEN
                    PERFORM pgq._record(v_job, 'debounced', v_now, 'superseded by a newer dispatch of ' || v_job.debounce_key,
                                        p_started => false);
                    DELETE FROM pgq.jobs j WHERE j.id = v_job.id;
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
                        UPDATE pgq.jobs j SET overlap_keys = v_admit.held WHERE j.id = v_job.id;
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

COMMENT ON FUNCTION pgq.reserve(text, text[], int, int, timestamptz) IS
    'Worker protocol: sweeps expired leases, reserves up to max jobs from the queues in order (SKIP LOCKED), applies the pickup checks (debounce, S12, middleware); returns runnable jobs with fresh lease tokens, and the others with pickup set.';

-- +goose StatementBegin
-- pgq._reject: records calls made with a lease token that no longer holds its job (S15)
-- on the attempt that token belonged to.
CREATE FUNCTION pgq._reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamptz) RETURNS void
LANGUAGE sql VOLATILE AS $$
    UPDATE pgq.attempts a
    SET rejected_calls = array_append(a.rejected_calls, format('%s rejected at %s: lease lost', p_call, p_now))
    FROM unnest(p_uuids, p_tokens) AS t(uuid, token)
    WHERE a.job_uuid = t.uuid
      AND a.lease_token = t.token;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.complete: the attempts of these jobs succeeded. Each job is deleted only when its
-- lease token still holds it; the attempt is recorded as succeeded. Calls whose token lost
-- its lease are rejected and recorded on that token's attempt (S15).
-- Returns the uuids completed. State change: reserved -> finished.
CREATE FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan  -- planning its CTEs cost more than running them
AS $$
DECLARE
    -- clock_timestamp: inside run_sql_job's transaction now() is when the handler started
    v_now  timestamptz := coalesce(complete.as_of, clock_timestamp());
    v_done uuid[];
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
        RETURNING j.*
    ), history AS (
        INSERT INTO pgq.attempts
            (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome)
        SELECT d.uuid, d.job, d.queue, d.attempts, d.reserved_by, d.lease_token, d.reserved_at, d.started_at,
               v_now, 'succeeded'
        FROM done d
    ), unlocked AS (
        -- S21/S22: the lock goes after an attempt that finished, if this job still owns it
        DELETE FROM pgq.unique_locks u
        USING done d
        WHERE u.key = d.unique_key AND u.owner = d.unique_token
    ), untokened AS (
        DELETE FROM pgq.debounce_tokens t
        USING done d
        WHERE t.key = d.debounce_key AND t.token = d.debounce_token
    ), closed AS (
        -- S29: a success clears the circuit's count
        DELETE FROM pgq.circuits c
        USING done d
        WHERE d.middleware IS NOT NULL
          AND c.key = pgq._circuit_key(d.job, d.payload, pgq._middleware(d.middleware, 'throttles_exceptions'))
    )
    SELECT coalesce(array_agg(d.uuid), '{}') INTO v_done FROM done d;

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

COMMENT ON FUNCTION pgq.complete(uuid[], uuid[], timestamptz) IS
    'Worker protocol: completes jobs whose lease token still holds them, recording succeeded attempts; stale tokens are rejected and recorded (S15). Returns the uuids completed.';

-- +goose StatementBegin
-- pgq._held: the job this lease token holds, locked, or NULL after recording the
-- rejected call (S15).
CREATE FUNCTION pgq._held(p_call text, p_uuid uuid, p_token uuid, p_now timestamptz) RETURNS pgq.jobs
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_job pgq.jobs;
BEGIN
    SELECT * INTO v_job FROM pgq.jobs j WHERE j.uuid = p_uuid AND j.lease_token = p_token FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM pgq._reject(p_call, ARRAY[p_uuid], ARRAY[p_token], p_now);
        RETURN NULL;
    END IF;
    RETURN v_job;
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
CREATE FUNCTION pgq.fail(
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
        WHERE j.id = v_job.id;
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
    WHERE j.id = v_job.id;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.fail(uuid, uuid, text, boolean, int, int[], timestamptz) IS
    'Worker protocol: records a failed or timed-out attempt and decides retry with backoff or final failure (S7-S10, S13, S17). Returns the attempt; no row when the lease was lost.';

-- +goose StatementBegin
-- pgq.fail_many: pgq.fail for a batch of attempts, in one statement and one transaction
-- (a worker's failures of the same moment). Returns one attempt row per call whose token
-- still held its job; a missing uuid lost its lease (rejected and recorded, S15).
CREATE FUNCTION pgq.fail_many(
    uuids           uuid[],
    tokens          uuid[],
    exceptions      text[],
    timed_out       boolean[],
    default_tries   int DEFAULT 1,
    default_backoff int[] DEFAULT '{0}'
) RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.tokens)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.exceptions)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.timed_out) THEN
        RAISE EXCEPTION 'pgq: fail_many needs as many tokens, exceptions and timed_out flags as uuids'
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT a.*
        FROM unnest(fail_many.uuids, fail_many.tokens, fail_many.exceptions, fail_many.timed_out)
                 AS f(uuid, token, exception, timed_out),
             LATERAL pgq.fail(f.uuid, f.token, f.exception, f.timed_out,
                              fail_many.default_tries, fail_many.default_backoff) a;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.fail_many(uuid[], uuid[], text[], boolean[], int, int[]) IS
    'Worker protocol: pgq.fail for a batch of attempts in one transaction; returns the attempts recorded (a missing uuid lost its lease).';

-- +goose StatementBegin
-- pgq.release: the job goes back to waiting for delay seconds without counting an
-- exception and without backoff (S11). With refund the attempt is given back (used when
-- a worker stops, S32: an interrupted attempt must not exhaust the job). Returns the
-- attempt recorded, or no row when the lease was lost (recorded, S15).
-- State change: reserved -> waiting.
CREATE FUNCTION pgq.release(
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
    WHERE j.id = v_job.id;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.release(uuid, uuid, int, boolean, text, timestamptz) IS
    'Worker protocol: puts a reserved job back to wait delay seconds, no exception counted (S11); refund gives the attempt back (shutdown, S32).';

-- +goose StatementBegin
-- pgq.heartbeat: extends the lease of every job whose token still holds it to now +
-- its queue's retry_after (S14). Returns the jobs still held; a job missing from the
-- result has lost its lease and its handler should stop.
CREATE FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF pgq.jobs
LANGUAGE sql VOLATILE AS $$
    UPDATE pgq.jobs j
    SET reserved_until = coalesce(heartbeat.as_of, now())
                         + make_interval(secs => coalesce((SELECT q.retry_after FROM pgq.queues q WHERE q.name = j.queue), 90))
    FROM unnest(heartbeat.uuids, heartbeat.tokens) AS t(uuid, token)
    WHERE j.uuid = t.uuid
      AND j.lease_token = t.token
    RETURNING j.*;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.heartbeat(uuid[], uuid[], timestamptz) IS
    'Worker protocol: extends the leases still held by these tokens; returns those jobs (S14).';

-- +goose StatementBegin
-- pgq.run_sql_job: runs a job's SQL handler function with its payload, then completes
-- the job, in the caller's transaction: the function's effects and the completion commit
-- together. Call it after setting statement_timeout to the job's timeout.
-- Raises 42883 when the handler function does not exist, PQ001 when the token no longer
-- holds the job (the caller must roll back, so the effects are discarded), and whatever
-- the handler raises. No dynamic SQL but the call: the name is resolved to a
-- regprocedure first, so it cannot inject anything.
CREATE FUNCTION pgq.run_sql_job(uuid uuid, token uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_job  pgq.jobs;
    v_proc regprocedure;
BEGIN
    SELECT * INTO v_job FROM pgq.jobs j WHERE j.uuid = run_sql_job.uuid AND j.lease_token = run_sql_job.token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: job % is not held by lease token %', run_sql_job.uuid, run_sql_job.token
            USING ERRCODE = 'PQ001';
    END IF;
    v_proc := pgq._handler_proc(v_job.handler);
    IF v_proc IS NULL THEN
        RAISE EXCEPTION 'pgq: handler function %(jsonb) of job % does not exist', v_job.handler, v_job.job
            USING ERRCODE = '42883';
    END IF;
    EXECUTE format('SELECT %s($1)', v_proc::regproc) USING v_job.payload;
    IF NOT EXISTS (SELECT FROM pgq.complete(ARRAY[v_job.uuid], ARRAY[run_sql_job.token])) THEN
        RAISE EXCEPTION 'pgq: job % lost its lease while its handler ran', v_job.uuid USING ERRCODE = 'PQ001';
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.run_sql_job(uuid, uuid) IS
    'Worker protocol: runs the job''s SQL handler with its payload and completes the job in the same transaction.';

-- +goose StatementBegin
-- pgq.run_now: a waiting job (delay or backoff) becomes available immediately (S20).
-- Returns false when no waiting job has that uuid.
CREATE FUNCTION pgq.run_now(uuid uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_queue text;
BEGIN
    UPDATE pgq.jobs j SET available_at = now(), wait_reason = 'run_now'
    WHERE j.uuid = run_now.uuid AND j.reserved_at IS NULL
    RETURNING j.queue INTO v_queue;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('pgq_jobs', v_queue);
    RETURN true;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.run_now(uuid) IS 'Makes a waiting job available now (S20); false when there is no such waiting job.';

-- +goose StatementBegin
-- pgq.retry_failed: puts failed jobs back on their queue with attempts reset and their
-- settings as dispatched; the attempt history is kept (S20). A deadline is moved by the
-- time the job spent since dispatch, so the job gets its whole retry window again.
-- uuid NULL retries every failed job (of queue, when given). Returns the uuids requeued.
-- State change: failed -> waiting.
CREATE FUNCTION pgq.retry_failed(uuid uuid, queue text DEFAULT NULL) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_uuids  uuid[];
    v_queues text[];
BEGIN
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE (retry_failed.uuid IS NULL OR f.uuid = retry_failed.uuid)
          AND (retry_failed.queue IS NULL OR f.queue = retry_failed.queue)
        RETURNING f.*
    ), back AS (
        -- The unique token comes back but not the lock (released when the job failed):
        -- every release is owner-checked, so this copy can never free another's lock (S22).
        -- A debounced job comes back without its token (also released): retrying it is a
        -- deliberate act, so it runs instead of being debounced at pickup.
        INSERT INTO pgq.jobs AS j
            (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, unique_key, unique_token, unique_until, debounce_key, debounce_token,
             middleware, wait_reason)
        SELECT g.uuid, g.job, g.queue, g.payload, g.priority, g.handler, g.tries, g.backoff, g.max_exceptions,
               g.timeout, g.fail_on_timeout, now() + (g.retry_until - g.dispatched_at), g.unique_key, g.unique_token,
               g.unique_until, NULL, NULL, g.middleware, 'retried'
        FROM gone g
        ORDER BY g.id
        RETURNING j.uuid, j.queue
    )
    SELECT coalesce(array_agg(b.uuid), '{}'), coalesce(array_agg(DISTINCT b.queue), '{}')
    INTO v_uuids, v_queues
    FROM back b;

    PERFORM pg_notify('pgq_jobs', q) FROM unnest(v_queues) q;
    RETURN QUERY SELECT unnest(v_uuids);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.retry_failed(uuid, text) IS
    'Requeues a failed job (or all, uuid NULL; optionally of one queue) with attempts reset; history kept (S20).';

-- +goose StatementBegin
-- pgq.forget_failed: deletes one failed job. Returns false when there was none.
CREATE FUNCTION pgq.forget_failed(uuid uuid) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    WITH gone AS (DELETE FROM pgq.failed_jobs f WHERE f.uuid = forget_failed.uuid RETURNING 1)
    SELECT EXISTS (SELECT FROM gone);
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.forget_failed(uuid) IS 'Deletes one failed job (S20); false when there was none.';

-- +goose StatementBegin
-- pgq.flush_failed: deletes every failed job, or those failed more than older_than ago.
-- Returns how many were deleted.
CREATE FUNCTION pgq.flush_failed(older_than interval DEFAULT NULL) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE flush_failed.older_than IS NULL OR f.failed_at < now() - flush_failed.older_than
        RETURNING 1
    )
    SELECT count(*) FROM gone;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.flush_failed(interval) IS 'Deletes all failed jobs, or those older than older_than (S20); returns the count.';

-- +goose StatementBegin
-- pgq.prune: deletes attempt history of jobs that are finished (no longer live or failed)
-- and finished more than older_than ago. Returns how many attempt rows were deleted.
CREATE FUNCTION pgq.prune(older_than interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count bigint;
BEGIN
    IF prune.older_than IS NULL OR prune.older_than < interval '0' THEN
        RAISE EXCEPTION 'pgq: prune older_than must be a non-negative interval, got %', prune.older_than
            USING ERRCODE = '22023';
    END IF;
    WITH gone AS (
        DELETE FROM pgq.attempts a
        WHERE a.finished_at < now() - prune.older_than
          AND NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = a.job_uuid)
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.uuid = a.job_uuid)
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.prune(interval) IS 'Deletes attempt history older than older_than of jobs no longer live or failed; returns the count.';

-- Views for psql. Each answers one question.

CREATE VIEW pgq.ready AS
SELECT j.queue, j.priority, j.id, j.uuid, j.job, j.attempts, j.available_at,
       now() - j.available_at AS waiting_for, j.wait_reason, j.payload
FROM pgq.jobs j
WHERE j.reserved_at IS NULL AND j.available_at <= now();

COMMENT ON VIEW pgq.ready IS 'Jobs a worker may reserve now.';

CREATE VIEW pgq.scheduled AS
SELECT j.queue, j.id, j.uuid, j.job, j.available_at, j.available_at - now() AS due_in, j.created_at, j.payload
FROM pgq.jobs j
WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0;

COMMENT ON VIEW pgq.scheduled IS 'Jobs waiting out a dispatch delay (never attempted yet).';

CREATE VIEW pgq.retrying AS
SELECT j.queue, j.id, j.uuid, j.job, j.attempts, j.tries, j.wait_reason, j.available_at,
       j.available_at - now() AS due_in, j.last_exception_attempt, j.last_exception, j.payload
FROM pgq.jobs j
WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0;

COMMENT ON VIEW pgq.retrying IS 'Jobs waiting to be attempted again: a backoff after an exception, or a release (wait_reason says which).';

CREATE VIEW pgq.running AS
SELECT j.queue, j.id, j.uuid, j.job, j.attempts, j.reserved_by AS worker, j.reserved_at, j.started_at,
       j.reserved_until AS lease_until, j.reserved_until < now() AS lease_expired, j.payload
FROM pgq.jobs j
WHERE j.reserved_at IS NOT NULL;

COMMENT ON VIEW pgq.running IS 'Reserved jobs: which worker runs them and until when their lease lasts.';

CREATE VIEW pgq.locks AS
SELECT 'unique'::text AS kind, u.key, u.job_uuid, u.owner AS token, u.created_at AS since, u.expires_at,
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = u.job_uuid) AS job_exists, NULL::text AS worker, NULL::int AS pid
FROM pgq.unique_locks u
UNION ALL
SELECT 'debounce', d.key, d.job_uuid, d.token, d.updated_at, NULL,
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = d.job_uuid), NULL, NULL
FROM pgq.debounce_tokens d
UNION ALL
SELECT 'overlap', o.key, o.job_uuid, NULL, o.since, o.since + make_interval(secs => o.expire_after),
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = o.job_uuid), o.worker, o.pid
FROM pgq.overlap_locks o
WHERE pgq._lock_held(o.pid, o.lock_id);

COMMENT ON VIEW pgq.locks IS 'Held locks: unique locks (key, owner job, expiry, whether the owner job still exists), current debounce tokens, and without_overlapping advisory locks still held (checked against pg_locks: worker, backend pid, since when).';

CREATE VIEW pgq.limits AS
SELECT 'rate_limit'::text AS kind, r.name, coalesce(w.key, r.name) AS key, r.max, r.per,
       CASE WHEN w.window_start + r.per > now() THEN w.hits ELSE 0 END AS used,
       CASE WHEN w.window_start + r.per > now() THEN w.window_start + r.per END AS resets_at,
       CASE WHEN w.window_start + r.per > now() AND w.hits >= r.max THEN 'exhausted' ELSE 'available' END AS state,
       NULL::text AS last_exception
FROM pgq.rate_limits r
LEFT JOIN pgq.rate_limit_windows w ON w.limit_name = r.name
UNION ALL
SELECT 'circuit', c.key, c.key, c.max_exceptions, make_interval(secs => c.decay),
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() THEN c.failures ELSE 0 END,
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() THEN c.window_start + make_interval(secs => c.decay) END,
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() AND c.failures >= c.max_exceptions
            THEN 'open' ELSE 'closed' END,
       c.last_exception
FROM pgq.circuits c;

COMMENT ON VIEW pgq.limits IS 'Each rate limit''s budget in its current window (used of max, when it resets) and each circuit''s state (open: jobs are turned away until resets_at + 3 s).';

CREATE VIEW pgq.failed AS
SELECT f.id, f.uuid, f.job, f.queue, f.attempts, f.failed_at, f.exception, f.payload,
       (SELECT jsonb_agg(jsonb_build_object(
                   'attempt', a.attempt, 'outcome', a.outcome, 'worker', a.worker,
                   'finished_at', a.finished_at, 'exception', a.exception, 'delay', a.delay)
               ORDER BY a.id)
        FROM pgq.attempts a WHERE a.job_uuid = f.uuid) AS history
FROM pgq.failed_jobs f;

COMMENT ON VIEW pgq.failed IS 'Failed jobs with every previous attempt (outcome and exception) as history.';

-- +goose Down
DROP SCHEMA pgq CASCADE;
