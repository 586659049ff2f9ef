-- Loads: a bulk dispatch at one row per chunk of jobs, not one per job.
--
-- A row of pgq.jobs and its three index entries cost more server time per job than a
-- bulk dispatch can spend to stay well ahead of COPY into a job table. A load writes one pgq.loads row per chunk of up to 1,000 payloads of one dispatch call:
-- the frozen settings once, and the payloads as one jsonb[]. pgq.reserve turns a chunk's
-- next jobs into job rows that are reserved already (sql/functions/21_storage_loads.sql): they
-- never enter jobs_reserve_idx, and skip the update from waiting to reserved.
--
-- * pgq.loads: LIST-partitioned by slot like pgq.jobs (S80): a chunk lives in the slot
--   that was current at its dispatch, and a draining slot is truncated once neither
--   table holds anything of it. A chunk holds the jobs first_id .. first_id + n - 1 and
--   first_uuid .. (the last 48 bits counting up); those numbered up to next have become
--   rows. No index on the whole table: the queue index finds the front of a queue,
--   first_uuid the chunk of any uuid.
-- * pgq.jobs_id_seq steps by 1,024 from here: a row takes one number, a chunk of up to
--   1,024 jobs the whole block after it, with one nextval. So ids stay unique, each job
--   of a chunk has its own (a lease token carries the id's low 44 bits), and a chunk
--   sits in the FIFO order of (available_at, id) where a row dispatched with it would.

-- +goose Up
ALTER SEQUENCE pgq.jobs_id_seq INCREMENT BY 1024;

CREATE TABLE pgq.loads (
    first_id        bigint NOT NULL,
    first_uuid      uuid NOT NULL,
    n               int NOT NULL CHECK (n BETWEEN 1 AND 1024),
    next            int NOT NULL DEFAULT 0,
    job             text NOT NULL,
    queue           text NOT NULL,
    priority        int NOT NULL,
    handler         regprocedure,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean NOT NULL,
    retry_until     timestamptz,
    available_at    timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    payloads        jsonb[] NOT NULL,
    txid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    slot            smallint NOT NULL,
    CHECK (next < n),
    CHECK (cardinality(payloads) >= n)
) PARTITION BY LIST (slot);

CREATE TABLE pgq.loads_0 PARTITION OF pgq.loads FOR VALUES IN (0) WITH (autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.loads_1 PARTITION OF pgq.loads FOR VALUES IN (1) WITH (autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.loads_2 PARTITION OF pgq.loads FOR VALUES IN (2) WITH (autovacuum_vacuum_cost_delay = 0);
CREATE TABLE pgq.loads_3 PARTITION OF pgq.loads FOR VALUES IN (3) WITH (autovacuum_vacuum_cost_delay = 0);
-- The payloads are read whole by the reserve that takes a chunk: no point in compressing
-- them first (jsonb compresses little), only in moving them out of line.
ALTER TABLE pgq.loads ALTER COLUMN payloads SET STORAGE EXTERNAL;

CREATE INDEX loads_queue_idx ON pgq.loads (queue, priority DESC, available_at, first_id);
CREATE INDEX loads_uuid_idx ON pgq.loads (first_uuid);
CREATE INDEX loads_txid_idx ON pgq.loads (txid);

COMMENT ON TABLE pgq.loads IS 'Jobs of bulk dispatches not yet reserved, a row per chunk of up to 1,024 (docs/design/storage.md): read pgq.live_jobs for the jobs.';
COMMENT ON COLUMN pgq.loads.first_id IS 'The id of the chunk''s first job; job i (1-based) has id first_id + i - 1.';
COMMENT ON COLUMN pgq.loads.first_uuid IS 'The uuid of the chunk''s first job; job i has it with i - 1 added to its last 48 bits.';
COMMENT ON COLUMN pgq.loads.next IS 'How many of the chunk''s first jobs have become rows of pgq.jobs; the chunk holds jobs next + 1 .. n.';
COMMENT ON COLUMN pgq.loads.payloads IS 'Job i''s payload is payloads[i]; elements past n are no longer the chunk''s.';
COMMENT ON COLUMN pgq.loads.txid IS 'The transaction that wrote the chunk: what the truncation of a slot looks for (pgq._slot_written_since).';
COMMENT ON COLUMN pgq.loads.slot IS 'The slot of pgq.job_slots the chunk lives in.';
COMMENT ON TABLE pgq.loads_0 IS 'Slot 0 of pgq.loads (pgq.job_slots): read pgq.loads.';
COMMENT ON TABLE pgq.loads_1 IS 'Slot 1 of pgq.loads (pgq.job_slots): read pgq.loads.';
COMMENT ON TABLE pgq.loads_2 IS 'Slot 2 of pgq.loads (pgq.job_slots): read pgq.loads.';
COMMENT ON TABLE pgq.loads_3 IS 'Slot 3 of pgq.loads (pgq.job_slots): read pgq.loads.';

ALTER TABLE pgq.job_slots ADD COLUMN loads regclass;
UPDATE pgq.job_slots s SET loads = format('pgq.loads_%s', s.slot)::regclass;
ALTER TABLE pgq.job_slots ALTER COLUMN loads SET NOT NULL;
COMMENT ON COLUMN pgq.job_slots.loads IS 'The slot''s partition of pgq.loads.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pgq.loads) THEN
        RAISE EXCEPTION 'pgq: migration 23 cannot be undone while pgq.loads holds jobs: let the workers take them first'
            USING ERRCODE = '55000';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE pgq.job_slots DROP COLUMN loads;
DROP TABLE pgq.loads;
ALTER SEQUENCE pgq.jobs_id_seq INCREMENT BY 1;
