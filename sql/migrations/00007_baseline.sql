-- The pgq schema as the migrations of earlier releases (versions 1 to 7) left it, for a
-- new installation: tables, indexes and their comments. An installation at version 7
-- skips this file; one at an older version must first be migrated by a release of that
-- series (this file refuses to run over an existing schema).
--
-- Functions, views and triggers are not here: each has one definition under
-- sql/functions/, applied after the migrations on every migrate (pgq.Migrate).
-- sql/schema.sql shows the whole result.
--
-- Job states, as rows:
--   waiting   pgq.jobs row, reserved_at IS NULL (ready once available_at <= now())
--   reserved  pgq.jobs row, reserved_at/reserved_until/lease_token set
--   finished  row gone from pgq.jobs; pgq.attempts keeps the history (succeeded)
--   failed    row gone from pgq.jobs; a pgq.failed_jobs row holds it (S17)

-- pgq.Migrate creates the schema before the migrations, for goose's version table
-- (pgq.goose_version, sql/bootstrap.sql); anything else in it is an older installation.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_class c WHERE c.relnamespace = to_regnamespace('pgq')
               AND c.relname NOT IN ('goose_version', 'goose_version_id_seq', 'goose_version_pkey')) THEN
        RAISE EXCEPTION 'pgq: schema pgq exists but is older than version 7: migrate it first with the pgq release whose last migration is 00007_batched_overlap_unlock.sql'
            USING ERRCODE = '55000';
    END IF;
END
$$;
-- +goose StatementEnd

CREATE SCHEMA IF NOT EXISTS pgq;

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
    id              bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    uuid            uuid NOT NULL DEFAULT gen_random_uuid(),
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
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Leaf pages split half full: every reservation (a non-HOT update) adds an entry for
    -- the job's new row version next to its uuid, and a full page then needs a bottom-up
    -- deletion pass that visits the heap.
    CONSTRAINT jobs_pkey PRIMARY KEY (uuid) WITH (fillfactor = 50)
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
COMMENT ON COLUMN pgq.jobs.id IS 'Dispatch order: the FIFO tie-break of jobs_reserve_idx. Not indexed on its own; uuid is the key.';
COMMENT ON COLUMN pgq.jobs.uuid IS 'The job''s identity. pgq.dispatch_many gives each job a time-ordered (version 7) uuid, so new entries land at the right edge of the indexes keyed by it.';
COMMENT ON COLUMN pgq.jobs.lease_token IS 'Fresh on every reservation; complete, fail, release and heartbeat must present it (S15).';

-- The reserve path: waiting jobs of one queue in priority, then FIFO order.
CREATE INDEX jobs_reserve_idx ON pgq.jobs (queue, priority DESC, available_at, id)
    WHERE reserved_at IS NULL;
-- The lease sweep: reserved jobs by lease end.
CREATE INDEX jobs_lease_idx ON pgq.jobs (reserved_until)
    WHERE reserved_until IS NOT NULL;

CREATE TABLE pgq.attempts (
    id             bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
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
    rejected_calls text[],
    -- One index for the history: a job's attempts in order (the reads), and unique.
    CONSTRAINT attempts_pkey PRIMARY KEY (job_uuid, id)
);

COMMENT ON TABLE pgq.attempts IS 'Attempt history (S19): one row per pickup of a job. Append-only; pruned by pgq.prune.';
COMMENT ON COLUMN pgq.attempts.started_at IS 'When the handler started; NULL when it never ran.';
COMMENT ON COLUMN pgq.attempts.delay IS 'Seconds the job was sent back to wait after this attempt (backoff or release); NULL when it did not go back.';
COMMENT ON COLUMN pgq.attempts.final IS 'True when this attempt ended the job for good (it went to pgq.failed_jobs).';
COMMENT ON COLUMN pgq.attempts.rejected_calls IS 'Calls made with this attempt''s lease token after the lease was lost (S15 fencing).';

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

-- +goose Down
-- Everything in pgq but goose's version table, which goose writes after this.
-- +goose StatementBegin
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT format('DROP %s IF EXISTS %s CASCADE', CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END, c.oid::regclass) AS stmt
        FROM pg_class c
        WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'p', 'v') AND NOT c.relispartition
          AND c.relname <> 'goose_version'
        UNION ALL
        SELECT format('DROP ROUTINE IF EXISTS %s CASCADE', p.oid::regprocedure) FROM pg_proc p WHERE p.pronamespace = 'pgq'::regnamespace
        UNION ALL
        SELECT format('DROP TYPE IF EXISTS %s CASCADE', t.oid::regtype) FROM pg_type t
        WHERE t.typnamespace = 'pgq'::regnamespace AND t.typtype IN ('c', 'e')
          AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
    LOOP
        EXECUTE r.stmt;
    END LOOP;
END
$$;
-- +goose StatementEnd
