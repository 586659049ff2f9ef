-- Faults: overlap locks become leases, attempts interrupted by infrastructure
-- are given back, and the schema knows the words for it.
--
-- * pgq.overlap_locks holds a lease per without_overlapping key (S34): the job and lease
--   token holding it and when it ends unless the worker's heartbeat renews it. It was a
--   record of session advisory locks, which a dropped connection freed while its worker
--   ran on. Stop every worker before migrating: an old worker's locks are not leases, and
--   its calls of the dropped functions would fail.
-- * pgq.jobs.interruptions counts the attempts of a job that infrastructure interrupted
--   and that were given back (S35); the outcome and wait reason 'interrupted' record them.
-- * pgq.reserve takes a call id (pgq.unreserve), and pgq.heartbeat returns uuids.

-- +goose Up
DROP VIEW IF EXISTS pgq.locks;
DROP FUNCTION IF EXISTS pgq.unlock_overlap(uuid, text[]);
DROP FUNCTION IF EXISTS pgq.unlock_overlap_many(uuid[], text[]);
DROP FUNCTION IF EXISTS pgq.expire_overlap();
DROP FUNCTION IF EXISTS pgq._lock_held(int, bigint);
DROP FUNCTION IF EXISTS pgq.reserve(text, text[], int, int, timestamptz);
DROP FUNCTION IF EXISTS pgq.heartbeat(uuid[], uuid[], timestamptz);

DELETE FROM pgq.overlap_locks;
ALTER TABLE pgq.overlap_locks
    DROP COLUMN lock_id,
    DROP COLUMN pid,
    ADD COLUMN lease_token uuid NOT NULL,
    ADD COLUMN expires_at timestamptz NOT NULL;
COMMENT ON TABLE pgq.overlap_locks IS 'without_overlapping leases (S26, S34): the job holding each key, until expires_at unless its worker''s heartbeat renews it. Released with the attempt''s outcome.';
COMMENT ON COLUMN pgq.overlap_locks.expires_at IS 'When the lease ends unless renewed: 10 s after the last heartbeat, never past since + expire_after.';

ALTER TABLE pgq.jobs ADD COLUMN interruptions int NOT NULL DEFAULT 0;
COMMENT ON COLUMN pgq.jobs.interruptions IS 'Attempts of this job that infrastructure interrupted and that were given back, not counted (S35); at most 3.';

ALTER TABLE pgq.jobs DROP CONSTRAINT jobs_wait_reason_check,
    ADD CONSTRAINT jobs_wait_reason_check CHECK (wait_reason IN ('dispatched', 'backoff', 'released', 'turned_away',
        'lease_expired', 'run_now', 'retried', 'interrupted'));
COMMENT ON COLUMN pgq.jobs.wait_reason IS 'Why a waiting job waits: dispatched (delay), backoff (after an exception), released (manual or shutdown), turned_away (middleware), lease_expired, run_now, retried (from failed_jobs), interrupted (given back after infrastructure interrupted it).';

-- NOT VALID, then VALIDATE: the history can be large, and validating takes no lock that
-- stops workers from writing it.
ALTER TABLE pgq.attempts DROP CONSTRAINT attempts_outcome_check,
    ADD CONSTRAINT attempts_outcome_check CHECK (outcome IN ('succeeded', 'failed', 'released', 'turned_away',
        'timed_out', 'lease_expired', 'debounced', 'exhausted', 'interrupted')) NOT VALID;
ALTER TABLE pgq.attempts VALIDATE CONSTRAINT attempts_outcome_check;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 10 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
