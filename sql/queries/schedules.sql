-- Schedules (S60-S66): the worker's round (worker/schedules.go) and the operations of
-- pgq-worker schedules.

-- name: ScheduleDue :many
-- The pending and due schedules as of the database's clock (or as_of, in tests), with
-- that clock: workers compute ticks by it, never by their own.
SELECT c.as_of::timestamptz AS as_of, d.*
FROM (SELECT coalesce(sqlc.narg('as_of')::timestamptz, now()) AS as_of) c,
     pgq.due_schedules(as_of => c.as_of, horizon => @horizon::interval) d;

-- name: SchedulePlan :one
SELECT pgq.plan_schedule(name => @name::text, version => @version::bigint,
                         next_run_at => sqlc.narg('next_run_at')::timestamptz,
                         error => sqlc.narg('error')::text)::boolean AS planned;

-- name: ScheduleFire :many
SELECT * FROM pgq.fire_schedule(name => @name::text, version => @version::bigint, expected => @expected::timestamptz,
                                ticks => @ticks::timestamptz[], next_run_at => @next_run_at::timestamptz,
                                skipped => @skipped::bigint, as_of => @as_of::timestamptz);

-- name: ScheduleList :many
SELECT * FROM pgq.schedules ORDER BY name;

-- name: ScheduleGet :one
SELECT * FROM pgq.schedules WHERE name = @name::text;

-- name: ScheduleDefine :one
SELECT * FROM pgq.schedule(
    name => @name::text,
    cron => @cron::text,
    job => @job::text,
    payload => @payload::jsonb,
    timezone => @timezone::text,
    queue => sqlc.narg('queue')::text,
    catch_up => @catch_up::text,
    paused => @paused::boolean,
    priority => @priority::int,
    tries => sqlc.narg('tries')::int,
    backoff => sqlc.narg('backoff')::int[],
    max_exceptions => sqlc.narg('max_exceptions')::int,
    timeout => sqlc.narg('timeout')::int,
    fail_on_timeout => sqlc.narg('fail_on_timeout')::boolean,
    retry_for => sqlc.narg('retry_for')::interval,
    middleware => sqlc.narg('middleware')::jsonb
);

-- name: ScheduleDelete :one
SELECT pgq.unschedule(name => @name::text)::boolean AS deleted;

-- name: SchedulePause :one
-- '' when there is no such schedule, else whether it was running ('true', 'false').
SELECT coalesce(pgq.pause_schedule(name => @name::text)::text, '')::text AS was_running;

-- name: ScheduleResume :one
-- '' when there is no such schedule, else whether it was paused ('true', 'false').
SELECT coalesce(pgq.resume_schedule(name => @name::text)::text, '')::text AS was_paused;

-- name: ScheduleRunNow :one
-- The nil uuid when there is no such schedule.
SELECT coalesce(pgq.run_schedule(name => @name::text), '00000000-0000-0000-0000-000000000000')::uuid AS job_uuid;
