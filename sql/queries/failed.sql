-- name: FailedJobList :many
-- Through the view pgq.failed, which pgq_reader may read (people on call use the CLI as
-- readers): the payload shows only to payload readers (S45).
SELECT f.uuid, f.job, f.queue, f.payload::jsonb AS payload, f.exception, f.failed_at, f.attempts,
       f.exception_detail, f.exception_hint
FROM pgq.failed f
WHERE sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text
ORDER BY f.failed_at DESC, f.id DESC
LIMIT @max::int;

-- name: FailedJobGet :one
-- Through the view pgq.failed, as FailedJobList.
SELECT f.uuid, f.job, f.queue, f.payload::jsonb AS payload, f.exception, f.failed_at, f.attempts,
       f.exception_detail, f.exception_hint
FROM pgq.failed f
WHERE f.uuid = @uuid::uuid;

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
