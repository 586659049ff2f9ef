-- name: JobDispatchMany :many
-- The payloads travel as text[] and become jsonb row by row: a jsonb[] parameter is
-- parsed during Bind, where each element's parse (a few kB of allocations) lives until
-- the call ends; when glibc hands that back to the kernel after each call, every call
-- faults it in again. Here each element's parse is freed with its row.
SELECT dispatch_many FROM pgq.dispatch_many(
    job => @job::text,
    payloads => ARRAY(SELECT p.payload::jsonb FROM unnest(@payloads::text[]) WITH ORDINALITY AS p(payload, n) ORDER BY p.n),
    queue => sqlc.narg('queue')::text,
    delay => sqlc.narg('delay')::interval,
    tries => sqlc.narg('tries')::int,
    backoff => sqlc.narg('backoff')::int[],
    retry_until => sqlc.narg('retry_until')::timestamptz,
    max_exceptions => sqlc.narg('max_exceptions')::int,
    timeout => sqlc.narg('timeout')::int,
    fail_on_timeout => sqlc.narg('fail_on_timeout')::boolean,
    priority => @priority::int,
    unique_key => sqlc.narg('unique_key')::text,
    unique_for => sqlc.narg('unique_for')::interval,
    unique_until => sqlc.narg('unique_until')::text,
    debounce_key => sqlc.narg('debounce_key')::text,
    debounce_for => sqlc.narg('debounce_for')::interval,
    debounce_max_wait => sqlc.narg('debounce_max_wait')::interval,
    middleware => sqlc.narg('middleware')::jsonb,
    retry_for => sqlc.narg('retry_for')::interval,
    traceparent => sqlc.narg('traceparent')::text,
    tracestate => sqlc.narg('tracestate')::text
);

-- name: JobClassDefine :one
SELECT * FROM pgq.define_job(
    name => @name::text,
    queue => @queue::text,
    handler => sqlc.narg('handler')::text,
    tries => sqlc.narg('tries')::int,
    backoff => sqlc.narg('backoff')::int[],
    max_exceptions => sqlc.narg('max_exceptions')::int,
    timeout => sqlc.narg('timeout')::int,
    fail_on_timeout => @fail_on_timeout::boolean,
    retry_for => sqlc.narg('retry_for')::interval,
    unique_for => sqlc.narg('unique_for')::interval,
    unique_until => sqlc.narg('unique_until')::text,
    unique_by => sqlc.narg('unique_by')::text[],
    debounce_for => sqlc.narg('debounce_for')::interval,
    debounce_by => sqlc.narg('debounce_by')::text[],
    debounce_max_wait => sqlc.narg('debounce_max_wait')::interval,
    middleware => sqlc.narg('middleware')::jsonb,
    max_tries => sqlc.narg('max_tries')::int,
    max_retry_for => sqlc.narg('max_retry_for')::interval,
    min_backoff => sqlc.narg('min_backoff')::int,
    max_timeout => sqlc.narg('max_timeout')::int,
    isolated => @isolated::boolean
);

-- name: QueueDefine :one
SELECT * FROM pgq.define_queue(name => @name::text, retry_after => @retry_after::int, paused => @paused::boolean,
                               fair_by => sqlc.narg('fair_by')::text);

-- name: QueueSetFairWeight :one
SELECT * FROM pgq.set_fair_weight(queue => @queue::text, key => @key::text, weight => @weight::int);

-- name: LimitDefine :one
SELECT * FROM pgq.define_limit(name => @name::text, max => @max::int, per => @per::interval);

-- name: ConcurrencyDefine :one
SELECT * FROM pgq.define_concurrency(name => @name::text, "limit" => @max::int);

-- name: JobStageDispatch :one
SELECT pgq.stage_dispatch();

-- name: JobDispatchStaged :one
SELECT pgq.dispatch_staged(
    job => @job::text,
    queue => sqlc.narg('queue')::text,
    delay => sqlc.narg('delay')::interval,
    tries => sqlc.narg('tries')::int,
    backoff => sqlc.narg('backoff')::int[],
    retry_until => sqlc.narg('retry_until')::timestamptz,
    max_exceptions => sqlc.narg('max_exceptions')::int,
    timeout => sqlc.narg('timeout')::int,
    fail_on_timeout => sqlc.narg('fail_on_timeout')::boolean,
    priority => @priority::int,
    unique_key => sqlc.narg('unique_key')::text,
    unique_for => sqlc.narg('unique_for')::interval,
    unique_until => sqlc.narg('unique_until')::text,
    debounce_key => sqlc.narg('debounce_key')::text,
    debounce_for => sqlc.narg('debounce_for')::interval,
    debounce_max_wait => sqlc.narg('debounce_max_wait')::interval,
    middleware => sqlc.narg('middleware')::jsonb,
    retry_for => sqlc.narg('retry_for')::interval,
    traceparent => sqlc.narg('traceparent')::text,
    tracestate => sqlc.narg('tracestate')::text
)::uuid[] AS uuids;
