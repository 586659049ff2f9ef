-- name: FailedJobList :many
SELECT *
FROM pgq.failed_jobs
WHERE sqlc.narg('queue')::text IS NULL OR queue = sqlc.narg('queue')::text
ORDER BY failed_at DESC, id DESC
LIMIT @max::int;

-- name: FailedJobGet :one
SELECT * FROM pgq.failed_jobs WHERE uuid = @uuid::uuid;

-- name: AttemptListByJob :many
SELECT * FROM pgq.attempts WHERE job_uuid = @job_uuid::uuid ORDER BY id;

-- name: FailedJobRetry :many
SELECT * FROM pgq.retry_failed(uuid => sqlc.narg('uuid')::uuid, queue => sqlc.narg('queue')::text,
                               job => sqlc.narg('job')::text, older_than => sqlc.narg('older_than')::interval);

-- name: FailedJobForget :one
SELECT pgq.forget_failed(uuid => @uuid::uuid)::boolean AS forgotten;

-- name: FailedJobFlush :one
SELECT pgq.flush_failed(older_than => sqlc.narg('older_than')::interval, queue => sqlc.narg('queue')::text,
                        job => sqlc.narg('job')::text)::bigint AS flushed;

-- name: JobRunNow :one
SELECT pgq.run_now(uuid => @uuid::uuid)::boolean AS found;

-- name: AttemptPrune :one
SELECT pgq.prune(older_than => @older_than::interval)::bigint AS pruned;

-- name: JobCancel :one
SELECT coalesce(pgq.cancel(uuid => @uuid::uuid), '')::text AS result;

-- name: QueuePause :one
SELECT pgq.pause_queue(queue => @queue::text)::boolean AS was_running;

-- name: QueueResume :one
SELECT pgq.resume_queue(queue => @queue::text)::boolean AS was_paused;
