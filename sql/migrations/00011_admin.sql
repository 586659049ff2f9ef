-- Operating pgq from outside a worker (issues 17, 18): cancelling a job, pausing a queue,
-- and a record of who did what.
--
-- * pgq.cancel asks for a running job to be cancelled by marking its row; its worker
--   sees the mark within a second and cancels the handler, or, if the worker is gone,
--   the next pickup cancels the job before it runs. The partial index holds only marked
--   rows, so a worker's poll for them reads nothing in the usual case.
-- * pgq.actions records operators' actions (retry, forget, flush, run now, cancel, pause,
--   resume) with the role that took them.

-- +goose Up
ALTER TABLE pgq.jobs ADD COLUMN cancel_requested_at timestamptz, ADD COLUMN cancel_requested_by text;
COMMENT ON COLUMN pgq.jobs.cancel_requested_at IS 'Set by pgq.cancel on a running job: its worker cancels the handler, or the next pickup cancels the job.';
CREATE INDEX jobs_cancel_idx ON pgq.jobs (reserved_by) WHERE cancel_requested_at IS NOT NULL;

ALTER TYPE pgq.pickup ADD VALUE 'cancelled';

ALTER TABLE pgq.attempts DROP CONSTRAINT attempts_outcome_check,
    ADD CONSTRAINT attempts_outcome_check CHECK (outcome IN ('succeeded', 'failed', 'released', 'turned_away',
        'timed_out', 'lease_expired', 'debounced', 'exhausted', 'interrupted', 'cancelled')) NOT VALID;
ALTER TABLE pgq.attempts VALIDATE CONSTRAINT attempts_outcome_check;

CREATE TABLE pgq.actions (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    actor    text NOT NULL,
    action   text NOT NULL CHECK (action IN ('retry', 'forget', 'flush', 'run_now', 'cancel', 'pause', 'resume')),
    job_uuid uuid,
    queue    text,
    detail   text
);
COMMENT ON TABLE pgq.actions IS 'Operators'' actions on jobs and queues (retry, forget, flush, run now, cancel, pause, resume), with the role that took each.';
CREATE INDEX actions_job_uuid_idx ON pgq.actions (job_uuid) WHERE job_uuid IS NOT NULL;

DROP FUNCTION IF EXISTS pgq._needs_pickup_check(text, jsonb, text, timestamptz, int, int, int, timestamptz);

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 11 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
