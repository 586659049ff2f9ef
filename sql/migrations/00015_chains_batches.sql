-- Chains and batches: jobs that run one after another, and groups of jobs
-- with callbacks, written in the dispatching transaction and advanced by the
-- transaction that ends each job.
--
-- * pgq.jobs and pgq.failed_jobs say which batch and chain a job belongs to (NULL for
--   a plain job, so the hot paths test one column and move on).
-- * pgq.job_batches is one row per batch: its options and the moments its callbacks were
--   dispatched. It is locked only when a batch may have ended, fails a job or is
--   cancelled, never on each success.
-- * pgq.batch_counts holds a batch's counters in 16 shards, one row per (batch, shard);
--   a member (a job, or a chain) always counts in the shard of hashtext(its id), so
--   concurrent completions of one batch spread over 16 rows instead of queueing on one.
--   A completion that brings its shard's pending count to 0 locks the batch row and
--   sums the shards: the last of those to commit sees every other, so the batch's end
--   is found exactly once (see pgq._batch_settle).
-- * pgq.job_chains is one row per chain: its steps, the step now queued, its state.

-- +goose Up
ALTER TABLE pgq.jobs ADD COLUMN batch_id uuid, ADD COLUMN chain_id uuid, ADD COLUMN chain_step int;
COMMENT ON COLUMN pgq.jobs.batch_id IS 'The batch the job belongs to (pgq.dispatch_batch), or NULL.';
COMMENT ON COLUMN pgq.jobs.chain_id IS 'The chain the job is a step of (pgq.dispatch_chain), or NULL; chain_step is its 1-based step.';
ALTER TABLE pgq.failed_jobs ADD COLUMN batch_id uuid, ADD COLUMN chain_id uuid, ADD COLUMN chain_step int;
CREATE INDEX jobs_batch_idx ON pgq.jobs (batch_id) WHERE batch_id IS NOT NULL;

CREATE TABLE pgq.job_batches (
    id              uuid PRIMARY KEY,
    name            text,
    total_jobs      int NOT NULL DEFAULT 0,
    options         jsonb NOT NULL,
    failed_job_ids  uuid[] NOT NULL DEFAULT '{}',
    cancelled_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    then_at         timestamptz,
    catch_at        timestamptz,
    finally_at      timestamptz
);
COMMENT ON TABLE pgq.job_batches IS 'Batches (pgq.dispatch_batch): options (then_job, catch_job, finally_job, allow_failures, queue), failed job uuids, when it was cancelled and finished, when each callback was dispatched. Counters are in pgq.batch_counts; read pgq.batches.';
COMMENT ON COLUMN pgq.job_batches.total_jobs IS 'Members dispatched into the batch: jobs, and chains (a chain counts once).';
COMMENT ON COLUMN pgq.job_batches.finished_at IS 'When every member had finished (succeeded, failed for good or cancelled); cleared when pgq.retry_failed brings one back.';

CREATE TABLE pgq.batch_counts (
    batch_id  uuid NOT NULL REFERENCES pgq.job_batches (id) ON DELETE CASCADE,
    shard     smallint NOT NULL,
    pending   int NOT NULL DEFAULT 0,
    failed    int NOT NULL DEFAULT 0,
    cancelled int NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, shard)
);
COMMENT ON TABLE pgq.batch_counts IS 'A batch''s counters in 16 shards (member id hashed): members not yet finished, failed for good, cancelled. Sum them, or read pgq.batches.';

CREATE TABLE pgq.job_chains (
    id          uuid PRIMARY KEY,
    batch_id    uuid REFERENCES pgq.job_batches (id) ON DELETE CASCADE,
    steps       jsonb NOT NULL,
    on_failure  text,
    queue       text,
    step        int NOT NULL DEFAULT 1,
    job_uuid    uuid,
    state       text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    exception   text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
COMMENT ON TABLE pgq.job_chains IS 'Chains (pgq.dispatch_chain): the steps, the step now queued and its job, the state; exception says why a failed or cancelled chain stopped.';
CREATE INDEX job_chains_batch_idx ON pgq.job_chains (batch_id) WHERE batch_id IS NOT NULL;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 15 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
