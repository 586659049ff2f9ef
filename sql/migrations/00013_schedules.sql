-- Schedules (issue: periodic jobs declared in SQL, dispatched exactly once per tick;
-- rules S60-S66).
--
-- * pgq.schedule_entries holds one row per schedule: its definition (pgq.schedule()
--   upserts it) and the state of its ticks. next_run_at is the next tick to fire, NULL
--   while pending (a worker computes it with the cron library); version counts the
--   changes that reset it, so a worker's computation under an older definition is
--   fenced off. The view pgq.schedules (sql/functions/55_schedules.sql) presents it.
-- * pgq.actions.schedule names the schedule of an operator's action on one (run now,
--   pause, resume), which reuse the existing action names.

-- +goose Up
CREATE TABLE pgq.schedule_entries (
    name            text PRIMARY KEY,
    cron            text NOT NULL,
    timezone        text NOT NULL DEFAULT 'UTC',
    job             text NOT NULL,
    payload         jsonb NOT NULL DEFAULT '{}',
    queue           text,
    catch_up        text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'none', 'all')),
    paused          boolean NOT NULL DEFAULT false,
    priority        int NOT NULL DEFAULT 0,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean,
    retry_for       interval,
    middleware      jsonb,
    version         bigint NOT NULL DEFAULT 1,
    next_run_at     timestamptz,
    last_tick       timestamptz,
    last_run_at     timestamptz,
    last_job_uuid   uuid,
    skipped_ticks   bigint NOT NULL DEFAULT 0,
    last_error      text,
    last_error_at   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgq.schedule_entries IS 'Schedules (S60-S66): one row per schedule, its definition and the state of its ticks; read it through the view pgq.schedules.';
COMMENT ON COLUMN pgq.schedule_entries.cron IS 'Cron expression (5 fields, or 6 with seconds first) or macro (@hourly, @every 30s, ...), validated by pgq._cron_problem.';
COMMENT ON COLUMN pgq.schedule_entries.version IS 'Counts the changes that reset next_run_at (expression, time zone, resume): the fence of pgq.plan_schedule and pgq.fire_schedule.';
COMMENT ON COLUMN pgq.schedule_entries.next_run_at IS 'The next tick to fire; NULL while pending: a worker computes it within a second.';
COMMENT ON COLUMN pgq.schedule_entries.last_tick IS 'The latest tick a firing handled (fired or skipped by catch_up); no tick at or before it fires again.';
COMMENT ON COLUMN pgq.schedule_entries.last_run_at IS 'When the schedule last dispatched a job (a tick or a run now).';
COMMENT ON COLUMN pgq.schedule_entries.skipped_ticks IS 'Ticks that passed without a job: left out by catch_up after downtime (S62).';
COMMENT ON COLUMN pgq.schedule_entries.last_error IS 'Why the last dispatch of a tick failed (the job class changed so that the dispatch is refused); cleared by the next dispatch.';

CREATE INDEX schedule_entries_next_run_at_idx ON pgq.schedule_entries (next_run_at) WHERE NOT paused;

ALTER TABLE pgq.actions ADD COLUMN schedule text;
COMMENT ON COLUMN pgq.actions.schedule IS 'The schedule an action (run_now, pause, resume) was taken on; NULL for actions on jobs and queues.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 13 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
