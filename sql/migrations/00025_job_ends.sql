-- The end of every job that belongs to a chain or a batch (S70-S76), written by the
-- transaction that ends it: pgq.complete (succeeded), a failure for good, a cancel or a
-- drop at pickup. It is the one way the core tells the workflows that a job ended: the
-- trigger that 50_chains_batches.sql puts on this table moves the job's chain and counts
-- it in its batch, in that same transaction. A row stays while its chain or batch does,
-- so a finished member or step still names what it belonged to and how it ended.

-- +goose Up
CREATE TABLE pgq.job_ends (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_uuid   uuid NOT NULL,
    outcome    text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'cancelled')),
    exception  text,
    batch_id   uuid,
    chain_id   uuid,
    chain_step int,
    ended_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (batch_id IS NOT NULL OR chain_id IS NOT NULL)
);
CREATE INDEX job_ends_job_idx ON pgq.job_ends (job_uuid);
CREATE INDEX job_ends_batch_idx ON pgq.job_ends (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX job_ends_chain_idx ON pgq.job_ends (chain_id) WHERE chain_id IS NOT NULL;
COMMENT ON TABLE pgq.job_ends IS
    'The end of each job of a chain or batch (succeeded, failed, cancelled), written by the ending transaction; its trigger moves the chain and counts the batch (S70-S76).';

-- +goose Down
DROP TABLE pgq.job_ends;
