-- Storage a held xmin cannot grow without bound: pgq.jobs becomes a table
-- partitioned into four slots, and a slot whose jobs have all ended is truncated whole.
--
-- While a transaction, snapshot or replication slot holds the xmin horizon, no vacuum
-- can remove a dead row version, and every job leaves two (its insert and its
-- reservation) with their index entries: at 5,000 jobs a second the table grew by
-- 2.9 MB a second for as long as the hold lasted. TRUNCATE needs no vacuum and does not
-- care about the horizon. So new jobs go to one slot (pgq.job_slots, state 'current');
-- once it has grown past the worker's slot size, new jobs go to an empty slot and the
-- old one drains; a draining slot with no job left is truncated (pgq.rotate,
-- sql/functions/20_storage_slots.sql).
--
-- * pgq.jobs: LIST-partitioned by slot, partitions pgq.jobs_0 .. pgq.jobs_3. A job keeps
--   its slot for as long as it waits or runs; only pgq.rotate moves a waiting job to the
--   current slot (a delete and an insert, never an UPDATE of slot: a row moved across
--   partitions fails a concurrent FOR UPDATE with 40001 instead of being skipped).
--   uuid is the key of each slot, not of the whole table (a unique index of a
--   partitioned table must hold the partition key): uuids are random (version 7), pgq
--   never gives two jobs one, and the move deletes before it inserts, in one
--   transaction. PostgreSQL 15 has no
--   identity column on a partitioned table: id takes its numbers from a sequence that
--   goes on from the identity's. txid is NOT NULL now: every row is stamped, and the
--   truncation's last check relies on it (pgq._slot_written_since).
-- * pgq.job_slots: the four slots and the state of each: current (takes new jobs),
--   draining (takes none; truncated once no job is left in it) or empty.
-- * Lease tokens name their job's slot (the first hex digit of the last group), so
--   complete, heartbeat and a SQL handler's transaction read only that slot. Tokens
--   issued before this migration have 0 there for every job id below 2^44, and every
--   job is moved to slot 0 here: they still hold their jobs.
-- * The functions whose signatures named the old row type, and the views on the old
--   table, are dropped here and made again by sql/functions on the same migrate.

-- +goose Up
DROP VIEW IF EXISTS pgq.job_settings, pgq.locks, pgq.queue_overview, pgq.queue_stats, pgq.ready, pgq.retrying,
    pgq.running, pgq.scheduled;
DROP FUNCTION IF EXISTS pgq._bury(pgq.jobs, text, timestamptz);
DROP FUNCTION IF EXISTS pgq._cancel(pgq.jobs, timestamptz, boolean);
DROP FUNCTION IF EXISTS pgq._exhausted_message(pgq.jobs, timestamptz);
DROP FUNCTION IF EXISTS pgq._give_back(pgq.jobs, text, timestamptz, boolean);
DROP FUNCTION IF EXISTS pgq._held(text, uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS pgq._record(pgq.jobs, text, timestamptz, text, int, boolean, boolean);
DROP FUNCTION IF EXISTS pgq._reported(pgq.jobs, pgq.pickup, text, text);
DROP FUNCTION IF EXISTS pgq._turn_away(pgq.jobs, text, text, int, boolean, timestamptz);

CREATE SEQUENCE pgq.jobs_slotted_id_seq;
SELECT setval('pgq.jobs_slotted_id_seq', s.last_value, s.is_called) FROM pgq.jobs_id_seq s;

CREATE TABLE pgq.jobs_slotted (
    id              bigint NOT NULL DEFAULT nextval('pgq.jobs_slotted_id_seq'),
    uuid            uuid NOT NULL DEFAULT gen_random_uuid(),
    job             text NOT NULL,
    queue           text NOT NULL,
    payload         jsonb NOT NULL,
    priority        int NOT NULL DEFAULT 0,
    -- settings frozen at dispatch (S1); NULL tries/backoff/timeout mean the worker's defaults
    handler         regprocedure,
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
    wait_reason     text NOT NULL DEFAULT 'dispatched',
    -- reservation (NULL while waiting)
    reserved_at     timestamptz,
    reserved_until  timestamptz,
    reserved_by     text,
    lease_token     uuid,
    started_at      timestamptz,
    overlap_keys    text[],
    created_at      timestamptz NOT NULL DEFAULT now(),
    interruptions   int NOT NULL DEFAULT 0,
    cancel_requested_at timestamptz,
    cancel_requested_by text,
    batch_id        uuid,
    chain_id        uuid,
    chain_step      int,
    middleware_keys jsonb,
    txid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    slot            smallint NOT NULL,
    CONSTRAINT jobs_wait_reason_check CHECK (wait_reason IN ('dispatched', 'backoff', 'released', 'turned_away',
                                                             'lease_expired', 'run_now', 'retried', 'interrupted'))
) PARTITION BY LIST (slot);

-- Every reservation and completion leaves dead index entries at the head of the reserve
-- index (no update of a job can be HOT: it changes indexed columns). Vacuum each slot by
-- row count, not by a fraction of its size, and without throttling.
CREATE TABLE pgq.jobs_0 PARTITION OF pgq.jobs_slotted FOR VALUES IN (0)
    WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
          autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
          autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.jobs_1 PARTITION OF pgq.jobs_slotted FOR VALUES IN (1)
    WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
          autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
          autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.jobs_2 PARTITION OF pgq.jobs_slotted FOR VALUES IN (2)
    WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
          autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
          autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.jobs_3 PARTITION OF pgq.jobs_slotted FOR VALUES IN (3)
    WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
          autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000,
          autovacuum_vacuum_cost_delay = 0);

INSERT INTO pgq.jobs_slotted
    (id, uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout,
     retry_until, unique_key, unique_token, unique_until, debounce_key, debounce_token, middleware, attempts,
     exceptions, lease_expiries, last_exception, last_exception_attempt, turn_aways, available_at, wait_reason,
     reserved_at, reserved_until, reserved_by, lease_token, started_at, overlap_keys, created_at, interruptions,
     cancel_requested_at, cancel_requested_by, batch_id, chain_id, chain_step, middleware_keys, txid, slot)
SELECT id, uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout,
       retry_until, unique_key, unique_token, unique_until, debounce_key, debounce_token, middleware, attempts,
       exceptions, lease_expiries, last_exception, last_exception_attempt, turn_aways, available_at, wait_reason,
       reserved_at, reserved_until, reserved_by, lease_token, started_at, overlap_keys, created_at, interruptions,
       cancel_requested_at, cancel_requested_by, batch_id, chain_id, chain_step, middleware_keys,
       pg_current_xact_id(), 0
FROM pgq.jobs
ORDER BY id;

DROP TABLE pgq.jobs;
ALTER TABLE pgq.jobs_slotted RENAME TO jobs;
ALTER SEQUENCE pgq.jobs_slotted_id_seq RENAME TO jobs_id_seq;
ALTER SEQUENCE pgq.jobs_id_seq OWNED BY pgq.jobs.id;

-- The key is uuid, in each slot: a unique index of the partitioned table would have to
-- hold slot, and no index may. A statement that names its slot and its rows by ctid
-- (pgq.reserve) must find them by TID scan, and the planner takes an index scan on
-- slot = $1 instead when an index has the column. Leaf pages split half full: every
-- reservation (a non-HOT update) adds an entry for the job's new row version next to
-- its uuid, and a full page then needs a bottom-up deletion pass that visits the heap.
ALTER TABLE pgq.jobs_0 ADD CONSTRAINT jobs_0_pkey PRIMARY KEY (uuid) WITH (fillfactor = 50);
ALTER TABLE pgq.jobs_1 ADD CONSTRAINT jobs_1_pkey PRIMARY KEY (uuid) WITH (fillfactor = 50);
ALTER TABLE pgq.jobs_2 ADD CONSTRAINT jobs_2_pkey PRIMARY KEY (uuid) WITH (fillfactor = 50);
ALTER TABLE pgq.jobs_3 ADD CONSTRAINT jobs_3_pkey PRIMARY KEY (uuid) WITH (fillfactor = 50);
-- The reserve path: waiting jobs of one queue in priority, then FIFO order.
CREATE INDEX jobs_reserve_idx ON pgq.jobs (queue, priority DESC, available_at, id) WHERE reserved_at IS NULL;
-- The lease sweep: reserved jobs by lease end.
CREATE INDEX jobs_lease_idx ON pgq.jobs (reserved_until) WHERE reserved_until IS NOT NULL;
CREATE INDEX jobs_cancel_idx ON pgq.jobs (reserved_by) WHERE cancel_requested_at IS NOT NULL;
CREATE INDEX jobs_batch_idx ON pgq.jobs (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX jobs_txid_idx ON pgq.jobs (txid);

COMMENT ON TABLE pgq.jobs IS 'Live jobs: waiting (reserved_at IS NULL) or reserved by a worker under a lease. Partitioned by slot (pgq.job_slots).';
COMMENT ON COLUMN pgq.jobs.id IS 'Dispatch order: the FIFO tie-break of jobs_reserve_idx. Not indexed on its own; uuid is the key.';
COMMENT ON COLUMN pgq.jobs.uuid IS 'The job''s identity. pgq.dispatch_many gives each job a time-ordered (version 7) uuid, so new entries land at the right edge of the indexes keyed by it.';
COMMENT ON COLUMN pgq.jobs.unique_token IS 'Owner token of this job''s unique lock: every release deletes the lock only if it still matches (S22).';
COMMENT ON COLUMN pgq.jobs.debounce_token IS 'This dispatch''s debounce token: the job runs only while it is the key''s current token (S24).';
COMMENT ON COLUMN pgq.jobs.turn_aways IS 'Turn-aways so far by middleware name, e.g. {"without_overlapping": 2}; the S12 failure text reports them.';
COMMENT ON COLUMN pgq.jobs.wait_reason IS 'Why a waiting job waits: dispatched (delay), backoff (after an exception), released (manual or shutdown), turned_away (middleware), lease_expired, run_now, retried (from failed_jobs), interrupted (given back after infrastructure interrupted it).';
COMMENT ON COLUMN pgq.jobs.lease_token IS 'Fresh on every reservation, and names the job''s slot; complete, fail, release and heartbeat must present it (S15).';
COMMENT ON COLUMN pgq.jobs.overlap_keys IS 'Overlap keys whose advisory locks the reserving worker''s session holds for this attempt.';
COMMENT ON COLUMN pgq.jobs.interruptions IS 'Attempts of this job that infrastructure interrupted and that were given back, not counted (S35); at most 3.';
COMMENT ON COLUMN pgq.jobs.cancel_requested_at IS 'Set by pgq.cancel on a running job: its worker cancels the handler, or the next pickup cancels the job.';
COMMENT ON COLUMN pgq.jobs.batch_id IS 'The batch the job belongs to (pgq.dispatch_batch), or NULL.';
COMMENT ON COLUMN pgq.jobs.chain_id IS 'The chain the job is a step of (pgq.dispatch_chain), or NULL; chain_step is its 1-based step.';
COMMENT ON COLUMN pgq.jobs.middleware_keys IS 'The key of each middleware (a JSON array of strings, by position), computed at dispatch; NULL when not computed yet (reserve computes it).';
COMMENT ON COLUMN pgq.jobs.txid IS 'The top-level transaction that last made the job waiting or set its lease: what reserve''s low-water marks (pgq._marks_since) and the truncation of a slot (pgq._slot_written_since) look for.';
COMMENT ON TABLE pgq.jobs_0 IS 'Slot 0 of pgq.jobs (pgq.job_slots): read pgq.jobs.';
COMMENT ON TABLE pgq.jobs_1 IS 'Slot 1 of pgq.jobs (pgq.job_slots): read pgq.jobs.';
COMMENT ON TABLE pgq.jobs_2 IS 'Slot 2 of pgq.jobs (pgq.job_slots): read pgq.jobs.';
COMMENT ON TABLE pgq.jobs_3 IS 'Slot 3 of pgq.jobs (pgq.job_slots): read pgq.jobs.';
COMMENT ON COLUMN pgq.jobs.slot IS 'The partition the job lives in (pgq.job_slots): the current slot when it was dispatched, or when pgq.rotate moved it.';

CREATE TABLE pgq.job_slots (
    slot      smallint PRIMARY KEY,
    partition regclass NOT NULL UNIQUE,
    state     text NOT NULL CHECK (state IN ('current', 'draining', 'empty')),
    since     timestamptz NOT NULL DEFAULT now(),
    tries     int NOT NULL DEFAULT 0,
    next_try  timestamptz
);
CREATE UNIQUE INDEX job_slots_current_idx ON pgq.job_slots (state) WHERE state = 'current';
COMMENT ON TABLE pgq.job_slots IS 'The partitions of pgq.jobs: current (new jobs go there), draining (no new jobs; truncated once no job is left) or empty. pgq.rotate moves them on; read pgq.job_storage for their sizes.';
COMMENT ON COLUMN pgq.job_slots.since IS 'When the slot entered its state.';
COMMENT ON COLUMN pgq.job_slots.tries IS 'Draining: how many times pgq.rotate found a job left in it, or could not take its lock in time.';
COMMENT ON COLUMN pgq.job_slots.next_try IS 'Draining: pgq.rotate tries to truncate it again from then on (1, 2, 4, 8, then every 10 seconds).';
INSERT INTO pgq.job_slots (slot, partition, state) VALUES
    (0, 'pgq.jobs_0', 'current'), (1, 'pgq.jobs_1', 'empty'), (2, 'pgq.jobs_2', 'empty'), (3, 'pgq.jobs_3', 'empty');

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 18 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
