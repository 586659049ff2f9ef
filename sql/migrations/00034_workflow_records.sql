-- What chains and batches keep of their jobs, so that the dashboard, the CLI and psql can
-- show every member, step and callback after it ran (S95-S97).
--
-- * pgq.callbacks: one row per callback queued (a batch's then, catch or finally job, a
--   chain's on_failure job): its job's uuid, or why it could not be queued, and how it
--   ended. A callback job carries chain_id = the id of its batch or chain and
--   chain_step = 0, so that the core records its end in pgq.job_ends as it does any
--   chain's or batch's job; the workflows' trigger copies that end here. A batch's then,
--   catch and finally run once each; a chain's on_failure once each time the chain stops
--   failed (a retried step may fail it again).
-- * pgq.job_chains.job_uuids: each step's job, in step order, once it was queued (NULL
--   for a step dropped as a duplicate); the chain used to keep only its current one.
-- * pgq.job_ends also holds the jobs a batch's cancel deletes while they wait, so every
--   job that belonged to a chain or a batch has its end there.
-- * Indexes for the pages that list a batch's jobs by state (keyset), the stalled
--   check, the lists of batches and chains newest first, and the failed jobs of one
--   batch or chain. The ones on pgq.jobs are partial: a job outside batches costs
--   nothing more.

-- +goose Up
-- Queued with its batch or chain and its kind now (sql/functions/50_chains_batches.sql).
DROP FUNCTION IF EXISTS pgq._dispatch_callback(text, jsonb, text);
DROP FUNCTION IF EXISTS pgq._batch_callback(pgq.job_batches, text, jsonb);

CREATE TABLE pgq.callbacks (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id  uuid REFERENCES pgq.job_batches (id) ON DELETE CASCADE,
    chain_id  uuid REFERENCES pgq.job_chains (id) ON DELETE CASCADE,
    kind      text NOT NULL CHECK (kind IN ('then', 'catch', 'finally', 'on_failure')),
    job       text NOT NULL,
    job_uuid  uuid,
    queued_at timestamptz NOT NULL DEFAULT now(),
    error     text,
    outcome   text CHECK (outcome IN ('succeeded', 'failed', 'cancelled')),
    exception text,
    ended_at  timestamptz,
    CHECK (num_nonnulls(batch_id, chain_id) = 1),
    CHECK (job_uuid IS NOT NULL OR error IS NOT NULL)
);
CREATE INDEX callbacks_batch_idx ON pgq.callbacks (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX callbacks_chain_idx ON pgq.callbacks (chain_id) WHERE chain_id IS NOT NULL;
CREATE UNIQUE INDEX callbacks_job_idx ON pgq.callbacks (job_uuid) WHERE job_uuid IS NOT NULL;
COMMENT ON TABLE pgq.callbacks IS
    'Each callback queued for a batch (then, catch, finally) or a chain (on_failure): its job uuid, or error when it could not be queued, and its end (outcome NULL: waiting, running, or failed and retried) (S97).';

COMMENT ON COLUMN pgq.jobs.chain_id IS
    'The chain the job is a step of (pgq.dispatch_chain), or NULL; chain_step is its 1-based step. chain_step 0: the job is a callback (pgq.callbacks) of the batch or chain of this id.';

ALTER TABLE pgq.job_chains ADD COLUMN job_uuids uuid[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN pgq.job_chains.job_uuids IS
    'Each step''s job uuid in step order, once queued; NULL for a step dropped as a duplicate (S97).';
-- The chains of before: their ended steps are in pgq.job_ends, the current one is job_uuid.
UPDATE pgq.job_chains c
SET job_uuids = ARRAY(SELECT CASE WHEN s = c.step THEN c.job_uuid
                                  ELSE (SELECT e.job_uuid FROM pgq.job_ends e
                                        WHERE e.chain_id = c.id AND e.chain_step = s ORDER BY e.id DESC LIMIT 1) END
                      FROM generate_series(1, c.step) s ORDER BY s);

DROP INDEX pgq.jobs_batch_idx;
CREATE INDEX jobs_batch_idx ON pgq.jobs (batch_id, available_at, id) WHERE batch_id IS NOT NULL;
DROP INDEX pgq.job_ends_batch_idx;
CREATE INDEX job_ends_batch_idx ON pgq.job_ends (batch_id, outcome, ended_at, id) WHERE batch_id IS NOT NULL;
CREATE INDEX failed_jobs_batch_idx ON pgq.failed_jobs (batch_id, failed_at, id) WHERE batch_id IS NOT NULL;
CREATE INDEX failed_jobs_chain_idx ON pgq.failed_jobs (chain_id) WHERE chain_id IS NOT NULL;
CREATE INDEX job_batches_created_idx ON pgq.job_batches (created_at, id);
CREATE INDEX job_batches_unfinished_idx ON pgq.job_batches (created_at) WHERE finished_at IS NULL;
CREATE INDEX job_chains_created_idx ON pgq.job_chains (created_at, id);
CREATE INDEX job_chains_running_idx ON pgq.job_chains (created_at) WHERE state = 'running';
-- The waiting jobs of chains outside batches, by available_at: the stalled check reads
-- only those that have waited long, however many chains run.
CREATE INDEX jobs_chain_wait_idx ON pgq.jobs (available_at) WHERE chain_id IS NOT NULL AND batch_id IS NULL AND reserved_at IS NULL;

-- +goose Down
DROP INDEX pgq.jobs_chain_wait_idx;
-- The views on what goes, and those that gained columns (CREATE OR REPLACE VIEW cannot
-- drop one): the code being migrated down defines its own again.
DROP VIEW IF EXISTS pgq.batch_jobs;
DROP VIEW IF EXISTS pgq.stalled;
DROP VIEW IF EXISTS pgq.chains;
DROP VIEW IF EXISTS pgq.batches;
DROP VIEW IF EXISTS pgq.job_settings;
DROP VIEW IF EXISTS pgq.failed_job_settings;
DROP INDEX pgq.job_chains_running_idx;
DROP INDEX pgq.job_chains_created_idx;
DROP INDEX pgq.job_batches_unfinished_idx;
DROP INDEX pgq.job_batches_created_idx;
DROP INDEX pgq.failed_jobs_chain_idx;
DROP INDEX pgq.failed_jobs_batch_idx;
DROP INDEX pgq.job_ends_batch_idx;
CREATE INDEX job_ends_batch_idx ON pgq.job_ends (batch_id) WHERE batch_id IS NOT NULL;
DROP INDEX pgq.jobs_batch_idx;
CREATE INDEX jobs_batch_idx ON pgq.jobs (batch_id) WHERE batch_id IS NOT NULL;
ALTER TABLE pgq.job_chains DROP COLUMN job_uuids;
COMMENT ON COLUMN pgq.jobs.chain_id IS 'The chain the job is a step of (pgq.dispatch_chain), or NULL; chain_step is its 1-based step.';
DROP TABLE pgq.callbacks;
