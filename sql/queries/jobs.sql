-- pgq-worker jobs: any job by uuid, and lists by state. Like the dashboard's reads
-- (dashboard.sql, whose per-state lists it reuses), these read only what pgq_reader may:
-- people on call run them as readers.

-- name: JobFinishedList :many
-- Jobs that ended with this outcome (succeeded or cancelled), the newest first: the
-- attempt that ended each.
SELECT a.job_uuid, a.job, a.queue, a.attempt, a.worker, a.finished_at
FROM pgq.attempts a
WHERE a.outcome = @outcome::text
  AND (sqlc.narg('queue')::text IS NULL OR a.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR a.job = sqlc.narg('job')::text)
ORDER BY a.finished_at DESC, a.id DESC
LIMIT @max::int;

-- name: JobEndGet :one
-- The batch and chain of a job that ended (pgq.job_ends keeps them while the
-- batch or chain is kept).
SELECT e.batch_id, e.chain_id, e.chain_step
FROM pgq.job_ends e
WHERE e.job_uuid = @job_uuid::uuid
ORDER BY e.id DESC
LIMIT 1;

-- name: LiveWorkerList :many
-- The workers running now: what each serves (S87).
SELECT * FROM pgq.live_workers ORDER BY name;

-- name: DispatchWarningList :many
-- What would keep a job of this name in this queue from running (S87).
SELECT w::text AS warning FROM pgq.dispatch_warnings(job => @job::text, queue => sqlc.narg('queue')::text) w;

-- name: SchemaVersion :one
-- The last migration applied: goose's version table (pgq.Migrate).
SELECT coalesce(max(version_id), 0)::bigint AS version FROM pgq.goose_version WHERE is_applied;
