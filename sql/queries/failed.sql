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
SELECT * FROM pgq.retry_failed(uuid => sqlc.narg('uuid')::uuid, queue => sqlc.narg('queue')::text);

-- name: FailedJobForget :one
SELECT pgq.forget_failed(uuid => @uuid::uuid)::boolean AS forgotten;

-- name: FailedJobFlush :one
SELECT pgq.flush_failed(older_than => sqlc.narg('older_than')::interval)::bigint AS flushed;

-- name: JobRunNow :one
SELECT pgq.run_now(uuid => @uuid::uuid)::boolean AS found;

-- name: AttemptPrune :one
SELECT pgq.prune(older_than => @older_than::interval)::bigint AS pruned;

-- name: FailedJobFlushMatching :one
-- Deletes the failed jobs of queue, of job and failed more than older_than ago (a NULL
-- filter matches any) through pgq.forget_failed, which pgq.flush_failed cannot filter
-- so. One statement: the matching rows are locked first, in id order, so a job forgotten
-- or retried concurrently is skipped and not counted, and a job failing meanwhile is not
-- touched.
WITH matching AS MATERIALIZED (
    SELECT f.uuid
    FROM pgq.failed_jobs f
    WHERE (sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text)
      AND (sqlc.narg('job')::text IS NULL OR f.job = sqlc.narg('job')::text)
      AND (sqlc.narg('older_than')::interval IS NULL OR f.failed_at < now() - sqlc.narg('older_than')::interval)
    ORDER BY f.id
    FOR UPDATE
)
SELECT count(*) FILTER (WHERE pgq.forget_failed(uuid => m.uuid))::bigint AS flushed
FROM matching m;

-- name: FailedJobRetryMatching :many
-- Puts back the failed jobs FailedJobFlushMatching would delete, oldest failure first,
-- through pgq.retry_failed one uuid at a time, in one statement as above. Returns the
-- uuids requeued.
WITH matching AS MATERIALIZED (
    SELECT f.uuid
    FROM pgq.failed_jobs f
    WHERE (sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text)
      AND (sqlc.narg('job')::text IS NULL OR f.job = sqlc.narg('job')::text)
      AND (sqlc.narg('older_than')::interval IS NULL OR f.failed_at < now() - sqlc.narg('older_than')::interval)
    ORDER BY f.id
    FOR UPDATE
)
SELECT r.retried::uuid AS retried
FROM matching m
CROSS JOIN LATERAL pgq.retry_failed(uuid => m.uuid) AS r(retried);
