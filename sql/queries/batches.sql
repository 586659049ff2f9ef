-- name: ChainDispatch :one
SELECT pgq.dispatch_chain(steps => @steps::jsonb, on_failure => sqlc.narg('on_failure')::text,
                          queue => sqlc.narg('queue')::text, traceparent => sqlc.narg('traceparent')::text,
                          tracestate => sqlc.narg('tracestate')::text)::uuid AS id;

-- name: BatchDispatch :one
SELECT pgq.dispatch_batch(jobs => @jobs::jsonb, name => sqlc.narg('name')::text,
                          then_job => sqlc.narg('then_job')::text, catch_job => sqlc.narg('catch_job')::text,
                          finally_job => sqlc.narg('finally_job')::text, allow_failures => @allow_failures::boolean,
                          queue => sqlc.narg('queue')::text, traceparent => sqlc.narg('traceparent')::text,
                          tracestate => sqlc.narg('tracestate')::text)::uuid AS id;

-- name: BatchAdd :one
-- A running member of the batch passes its job's uuid and lease token (S93).
SELECT pgq.add_to_batch(batch => @batch::uuid, jobs => @jobs::jsonb, job => sqlc.narg('job')::uuid,
                        token => sqlc.narg('token')::uuid)::int AS added;

-- name: BatchCancel :one
SELECT coalesce(pgq.cancel_batch(batch => @batch::uuid), -1)::int AS cancelled;

-- name: JobBatchGet :one
SELECT coalesce(pgq.job_batch(job => @job::uuid), '00000000-0000-0000-0000-000000000000')::uuid AS batch_id;

-- name: BatchList :many
SELECT *
FROM pgq.batches
WHERE NOT @unfinished_only::boolean OR finished_at IS NULL
ORDER BY created_at DESC
LIMIT @max::int;

-- name: BatchGet :one
SELECT * FROM pgq.batches WHERE id = @id::uuid;

-- name: ChainListByBatch :many
SELECT * FROM pgq.chains WHERE batch_id = @batch_id::uuid ORDER BY created_at;

-- name: ChainGet :one
SELECT * FROM pgq.chains WHERE id = @id::uuid;

-- name: BatchRetryFailed :many
SELECT * FROM pgq.retry_batch_failed(batch => @batch::uuid);
