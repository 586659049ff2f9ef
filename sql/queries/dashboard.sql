-- The dashboard's reads (dashboard/). They read the views for psql, the dashboard's
-- views (pgq.job_settings, pgq.failed_job_settings, pgq.queue_overview), pgq.attempts,
-- pgq.actions, pgq.queues, pgq.job_classes, pgq.job_ends and pgq.callbacks only, so a role that may
-- SELECT just those (pgq_reader) can serve the dashboard read-only. Lists page by keyset
-- (the last row's sort key), never by OFFSET. The dashboard sends each with an unnamed
-- statement, planned for its own arguments: the optional filters (@x IS NULL OR …) then
-- fold away and the rest can use the indexes.

-- name: DashboardQueueList :many
-- Per queue: jobs in each state, the oldest wait, and whether it is paused.
SELECT * FROM pgq.queue_overview ORDER BY queue;

-- name: DashboardOutcomesPerMinute :many
-- Attempts that finished from @since to @before (NULL: now), by minute and outcome.
-- attempts_finished_at_brin limits the read to the block ranges holding those rows.
SELECT date_trunc('minute', a.finished_at)::timestamptz AS minute, a.outcome, count(*)::bigint AS attempts
FROM pgq.attempts a
WHERE a.finished_at >= @since::timestamptz
  AND (sqlc.narg('before')::timestamptz IS NULL OR a.finished_at < sqlc.narg('before')::timestamptz)
GROUP BY 1, 2;

-- name: DashboardActionList :many
-- Operators' actions, newest first, before id @before (NULL: from the newest).
SELECT a.*
FROM pgq.actions a
WHERE sqlc.narg('before')::bigint IS NULL OR a.id < sqlc.narg('before')::bigint
ORDER BY a.id DESC
LIMIT @max::int;

-- name: DashboardReadyList :many
-- Ready jobs in the order workers take them: queue, priority (high first), available_at,
-- id; after the row (after_queue, after_priority, after_at, after_id). Sorted with
-- sort_id before id, the same order, which pgq.ready reads through the queue's indexes
-- (pgq.live_jobs). after_sort is the sort_id of the row: no job after it has a smaller
-- one in its queue, priority and available_at, so that condition skips what comes
-- before the page without reading it.
SELECT r.queue, r.priority, r.id, r.uuid, r.job, r.attempts, r.available_at, r.wait_reason, r.sort_id
FROM pgq.ready r
WHERE (sqlc.narg('queue')::text IS NULL OR r.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR r.job = sqlc.narg('job')::text)
  AND (sqlc.narg('path')::text[] IS NULL OR r.payload #>> sqlc.narg('path')::text[] = sqlc.narg('value')::text)
  AND (sqlc.narg('after_queue')::text IS NULL
       OR (r.queue >= sqlc.narg('after_queue')::text
           AND (r.queue > sqlc.narg('after_queue')::text
                OR r.priority < sqlc.narg('after_priority')::int
                OR (r.priority = sqlc.narg('after_priority')::int
                    AND (r.available_at, r.id) > (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::bigint)))))
  AND (sqlc.narg('after_queue')::text IS NULL OR r.queue > sqlc.narg('after_queue')::text
       OR r.priority <> sqlc.narg('after_priority')::int
       OR (r.available_at, r.sort_id) >= (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_sort')::bigint))
ORDER BY r.queue, r.priority DESC, r.available_at, r.sort_id, r.id
LIMIT @max::int;

-- name: DashboardScheduledList :many
-- Jobs waiting out a dispatch delay, the soonest due first.
SELECT s.queue, s.id, s.uuid, s.job, s.available_at, s.created_at
FROM pgq.scheduled s
WHERE (sqlc.narg('queue')::text IS NULL OR s.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR s.job = sqlc.narg('job')::text)
  AND (sqlc.narg('path')::text[] IS NULL OR s.payload #>> sqlc.narg('path')::text[] = sqlc.narg('value')::text)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (s.available_at, s.id) > (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::bigint))
ORDER BY s.available_at, s.id
LIMIT @max::int;

-- name: DashboardRetryingList :many
-- Jobs waiting to be attempted again (a backoff or a release: wait_reason), the soonest due first.
SELECT r.queue, r.id, r.uuid, r.job, r.attempts, r.tries, r.wait_reason, r.available_at,
       r.last_exception_attempt, r.last_exception
FROM pgq.retrying r
WHERE (sqlc.narg('queue')::text IS NULL OR r.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR r.job = sqlc.narg('job')::text)
  AND (sqlc.narg('path')::text[] IS NULL OR r.payload #>> sqlc.narg('path')::text[] = sqlc.narg('value')::text)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (r.available_at, r.id) > (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::bigint))
ORDER BY r.available_at, r.id
LIMIT @max::int;

-- name: DashboardRunningList :many
-- Reserved jobs, the lease that ends soonest first (jobs_lease_idx: every reserved job
-- has a lease end, which the first condition tells the planner).
SELECT r.queue, r.id, r.uuid, r.job, r.attempts, r.worker, r.reserved_at, r.started_at, r.lease_until
FROM pgq.running r
WHERE r.lease_until IS NOT NULL
  AND (sqlc.narg('queue')::text IS NULL OR r.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR r.job = sqlc.narg('job')::text)
  AND (sqlc.narg('worker')::text IS NULL OR r.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('path')::text[] IS NULL OR r.payload #>> sqlc.narg('path')::text[] = sqlc.narg('value')::text)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (r.lease_until, r.id) > (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::bigint))
ORDER BY r.lease_until, r.id
LIMIT @max::int;

-- name: DashboardFailedList :many
-- Failed jobs, the newest failure first (failed_jobs_failed_at_idx).
SELECT f.queue, f.id, f.uuid, f.job, f.attempts, f.failed_at, f.exception
FROM pgq.failed f
WHERE (sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR f.job = sqlc.narg('job')::text)
  AND (sqlc.narg('path')::text[] IS NULL OR f.payload #>> sqlc.narg('path')::text[] = sqlc.narg('value')::text)
  AND (sqlc.narg('older_than')::interval IS NULL OR f.failed_at < now() - sqlc.narg('older_than')::interval)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (f.failed_at, f.id) < (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::bigint))
ORDER BY f.failed_at DESC, f.id DESC
LIMIT @max::int;

-- name: DashboardFailedCount :one
-- How many failed jobs a bulk retry or flush with these filters would take (the filters
-- of pgq.retry_failed and pgq.flush_failed), for its confirmation.
SELECT count(*)::bigint AS failed
FROM pgq.failed f
WHERE (sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text)
  AND (sqlc.narg('job')::text IS NULL OR f.job = sqlc.narg('job')::text)
  AND (sqlc.narg('older_than')::interval IS NULL OR f.failed_at < now() - sqlc.narg('older_than')::interval);

-- name: DashboardJobGet :one
-- One live job's settings and state (no payload): pgq.job_settings's columns, for one job.
SELECT l.uuid, l.state, l.job, l.queue, l.priority, l.handler, l.tries, l.backoff, l.max_exceptions, l.timeout,
       l.fail_on_timeout, l.retry_until, l.unique_key, l.unique_until, l.debounce_key, l.middleware,
       l.attempts, l.exceptions, l.lease_expiries, l.interruptions, l.turn_aways,
       l.last_exception_attempt, l.last_exception, l.wait_reason, l.available_at,
       l.reserved_by AS worker, l.reserved_at, l.started_at, l.reserved_until AS lease_until,
       l.cancel_requested_at, l.cancel_requested_by, l.created_at AS dispatched_at,
       l.batch_id, l.chain_id, l.chain_step
FROM pgq.live_job(@uuid::uuid) l;

-- name: DashboardFailedJobGet :one
-- One failed job's settings and failure (no payload).
SELECT * FROM pgq.failed_job_settings f WHERE f.uuid = @uuid::uuid;

-- name: DashboardJobPayload :many
-- One job's payload, as pgq.live_jobs and pgq.failed show it (hidden wherever they hide
-- it): no row when the job is neither live nor failed.
SELECT p.payload::jsonb AS payload FROM (
    SELECT l.payload FROM pgq.live_job(@uuid::uuid) l
    UNION ALL SELECT f.payload FROM pgq.failed f WHERE f.uuid = @uuid::uuid
) p
LIMIT 1;

-- name: DashboardAttemptList :many
-- A job's attempts, the newest first, at most @max (the page shows how many were left out).
SELECT a.*
FROM pgq.attempts a
WHERE a.job_uuid = @job_uuid::uuid
ORDER BY a.id DESC
LIMIT @max::int;

-- name: DashboardAttemptCount :one
SELECT count(*)::bigint AS attempts FROM pgq.attempts a WHERE a.job_uuid = @job_uuid::uuid;

-- name: DashboardActionListByJob :many
SELECT a.* FROM pgq.actions a WHERE a.job_uuid = @job_uuid::uuid ORDER BY a.id;

-- name: DashboardLockList :many
-- Locks of one kind (unique, debounce, overlap) by key, after key @after, with the job
-- holding each and whether it is live, failed or gone.
SELECT l.kind, l.key, l.job_uuid, l.since, l.expires_at, l.worker,
       coalesce(s.job, f.job, '')::text AS job, (s.uuid IS NOT NULL)::boolean AS live, (f.uuid IS NOT NULL)::boolean AS failed
FROM pgq.locks l
LEFT JOIN LATERAL pgq.live_job(l.job_uuid) s ON true
LEFT JOIN pgq.failed_job_settings f ON f.uuid = l.job_uuid
WHERE l.kind = @kind::text
  AND (sqlc.narg('after')::text IS NULL OR l.key > sqlc.narg('after')::text)
ORDER BY l.key
LIMIT @max::int;

-- name: DashboardLimitList :many
-- Rate-limit budgets, circuit states and concurrency limits' handlers running (max 0:
-- a limit a class sets per key; per 0: none).
SELECT l.kind, l.name, l.key, coalesce(l.max, 0)::int AS max, coalesce(l.per, interval '0')::interval AS per,
       l.used, l.resets_at, l.state, l.last_exception
FROM pgq.limits l
ORDER BY l.kind DESC, l.name, l.key
LIMIT @max::int;

-- name: DashboardWorkerList :many
-- Workers seen lately: those running jobs, and those that finished an attempt since
-- @since (the recent history, through attempts_finished_at_brin). A worker renews the
-- lease of each job it runs to now + the queue's retry_after, so its last renewal is
-- its latest lease end less that; 90 is pgq._default_retry_after(), the lease of a queue
-- with no pgq.queues row (a private function a reader may not call; a test checks it).
WITH running AS (
    SELECT r.worker, count(*)::bigint AS running, min(r.started_at)::timestamptz AS oldest_start,
           max(r.lease_until - make_interval(secs => coalesce(q.retry_after, 90)))::timestamptz AS renewed_at
    FROM pgq.running r
    LEFT JOIN pgq.queues q ON q.name = r.queue
    WHERE r.lease_until IS NOT NULL
    GROUP BY r.worker
), finished AS (
    SELECT a.worker, count(*)::bigint AS finished, max(a.finished_at)::timestamptz AS last_finished_at
    FROM pgq.attempts a
    WHERE a.finished_at >= @since::timestamptz AND a.worker IS NOT NULL
    GROUP BY a.worker
)
SELECT w.worker::text AS worker, r.running, r.oldest_start, r.renewed_at, f.finished, f.last_finished_at
FROM (SELECT running.worker FROM running UNION SELECT finished.worker FROM finished) w
LEFT JOIN running r ON r.worker = w.worker
LEFT JOIN finished f ON f.worker = w.worker
ORDER BY w.worker;

-- name: DashboardWorkerJobList :many
-- What each worker runs: reserved jobs by worker, at most @max.
SELECT r.worker, r.uuid, r.job, r.queue, r.attempts, r.started_at, r.lease_until
FROM pgq.running r
WHERE r.lease_until IS NOT NULL
ORDER BY r.worker, r.reserved_at, r.id
LIMIT @max::int;

-- name: DashboardNapList :many
-- Idle worker sessions: a session that found no job naps on its queues (pgq.nap) holding
-- one shared advisory lock per queue, keys (pgq._lock_space('nap') = 776776852,
-- hashtext(queue)), in this database (pg_locks shows the whole server's). Counted per
-- known queue (pgq.queues and the job classes' queues).
SELECT q.queue::text AS queue, count(l.pid)::bigint AS napping
FROM (SELECT name AS queue FROM pgq.queues UNION SELECT c.queue FROM pgq.job_classes c) q
JOIN pg_catalog.pg_locks l
  ON l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
 AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
 AND l.classid::bigint = 776776852
 AND l.objid::bigint = hashtext(q.queue)::bigint & 4294967295
GROUP BY q.queue
ORDER BY q.queue;

-- name: DashboardQueueNames :many
-- Queues for the filters: pgq.queues and the job classes' queues.
SELECT name::text AS queue FROM pgq.queues UNION SELECT c.queue FROM pgq.job_classes c ORDER BY 1;

-- name: DashboardJobNames :many
-- Job names for the filters: the job classes.
SELECT c.name FROM pgq.job_classes c ORDER BY c.name;

-- name: DashboardActorSet :exec
-- Names the person the next actions of this transaction are taken for: pgq.actions
-- records it as on_behalf_of (migration 12).
SELECT set_config('pgq.on_behalf_of', @on_behalf_of::text, true);

-- name: DashboardBatchList :many
-- Batches, the newest first, after (after_at, after_id); state filters by pgq.batches's
-- state, unfinished_only narrows the read to the batches that have not finished
-- (job_batches_unfinished_idx) for the states that have not.
SELECT b.*
FROM pgq.batches b
WHERE (sqlc.narg('state')::text IS NULL OR b.state = sqlc.narg('state')::text)
  AND (NOT @unfinished_only::boolean OR b.finished_at IS NULL)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (b.created_at, b.id) < (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY b.created_at DESC, b.id DESC
LIMIT @max::int;

-- name: DashboardBatchUnfinishedCount :one
SELECT count(*)::bigint AS batches FROM pgq.batches b WHERE b.finished_at IS NULL;

-- name: DashboardCallbackListByBatches :many
-- The callbacks queued for these batches.
SELECT c.* FROM pgq.callbacks c WHERE c.batch_id = ANY (@batches::uuid[]) ORDER BY c.id;

-- name: DashboardCallbackListByChain :many
SELECT c.* FROM pgq.callbacks c WHERE c.chain_id = @chain_id::uuid ORDER BY c.id;

-- name: DashboardCallbackGet :one
-- The callback a job was queued as, if it was one.
SELECT c.* FROM pgq.callbacks c WHERE c.job_uuid = @job_uuid::uuid;

-- name: DashboardBatchJobList :many
-- One batch's jobs in one state, in (at, sort) order after (after_at, after_sort): each
-- state reads one index in that order (pgq.batch_jobs).
SELECT w.*
FROM pgq.batch_jobs w
WHERE w.batch_id = @batch_id::uuid AND w.state = @state::text
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (w.at, w.sort) > (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_sort')::bigint))
ORDER BY w.at, w.sort
LIMIT @max::int;

-- name: DashboardBatchJobCounts :many
-- One batch's jobs by state: the live and failed ones through pgq.batch_jobs, the ended
-- ones counted in pgq.job_ends itself (the view would look each one's attempt up).
SELECT w.state, count(*)::bigint AS jobs
FROM pgq.batch_jobs w
WHERE w.batch_id = @batch_id::uuid AND w.state IN ('ready', 'scheduled', 'retrying', 'running', 'failed')
GROUP BY w.state
UNION ALL
SELECT e.outcome, count(*)::bigint
FROM pgq.job_ends e
WHERE e.batch_id = @batch_id::uuid AND e.outcome IN ('succeeded', 'cancelled')
GROUP BY e.outcome;

-- name: DashboardChainList :many
-- Chains, the newest first, after (after_at, after_id), of one state and one batch when given.
SELECT c.id, c.batch_id, c.state, c.step, c.total_steps, c.job, c.job_uuid, c.on_failure, c.queue, c.exception,
       c.created_at, c.finished_at, c.step_jobs
FROM pgq.chains c
WHERE (sqlc.narg('state')::text IS NULL OR c.state = sqlc.narg('state')::text)
  AND (sqlc.narg('batch_id')::uuid IS NULL OR c.batch_id = sqlc.narg('batch_id')::uuid)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (c.created_at, c.id) < (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY c.created_at DESC, c.id DESC
LIMIT @max::int;

-- name: DashboardChainGet :one
SELECT c.id, c.batch_id, c.state, c.step, c.total_steps, c.job, c.job_uuid, c.on_failure, c.queue, c.exception,
       c.created_at, c.finished_at, c.step_jobs, c.job_uuids
FROM pgq.chains c
WHERE c.id = @id::uuid;

-- name: DashboardChainEndList :many
-- How the steps of a chain ended, in order (a retried step has more than one end).
SELECT e.job_uuid, e.outcome, e.exception, e.chain_step, e.ended_at
FROM pgq.job_ends e
WHERE e.chain_id = @chain_id::uuid AND e.chain_step > 0
ORDER BY e.id;

-- name: DashboardJobEndGet :one
-- The last end of a job of a chain or batch (pgq.job_ends): which one it belonged to.
SELECT e.batch_id, e.chain_id, e.chain_step, e.outcome, e.ended_at
FROM pgq.job_ends e
WHERE e.job_uuid = @job_uuid::uuid
ORDER BY e.id DESC
LIMIT 1;

-- name: DashboardStalledList :many
-- Stalled chains and batches (S95), the longest waiting first.
SELECT s.kind, s.id, s.name, s.job_uuid, s.job, s.queue, s.waiting_since, s.retry_after, s.paused
FROM pgq.stalled s
ORDER BY s.waiting_since, s.id
LIMIT @max::int;

-- name: DashboardStalledGet :many
-- Whether one chain or batch stalled (S95): a row if it did.
SELECT s.kind, s.id, s.name, s.job_uuid, s.job, s.queue, s.waiting_since, s.retry_after, s.paused
FROM pgq.stalled s
WHERE s.id = @id::uuid;

-- name: DashboardFairQueueList :many
-- The fair queues (S114): each one's payload field, and whether it is paused.
SELECT q.name AS queue, q.fair_by::text AS fair_by, q.paused
FROM pgq.queues q
WHERE q.fair_by IS NOT NULL
ORDER BY q.name;

-- name: DashboardFairKeyList :many
-- The first @max keys of each fair queue with live jobs (S119), of queue @queue only
-- when given, and key @key only when given: by most ready jobs (then the longest
-- oldest wait), or with @by_wait by the longest oldest wait (then most ready). Each row
-- carries its queue's figures over every key that matched: keys, ready, running. One
-- pass over the fair queues' live jobs: no order of keys has an index, so each request
-- counts them all.
SELECT k.queue, k.key, k.weight, k.ready, k.oldest_wait, k.later, k.running,
       k.queue_keys, k.queue_ready, k.queue_running
FROM (SELECT f.queue, coalesce(f.key, '') AS key, f.weight, f.ready, f.oldest_wait, f.later, f.running,
             row_number() OVER (PARTITION BY f.queue
                                ORDER BY CASE WHEN @by_wait::boolean THEN f.oldest_wait END DESC NULLS LAST,
                                         f.ready DESC, f.oldest_wait DESC, f.key) AS n,
             count(*) OVER (PARTITION BY f.queue)::bigint AS queue_keys,
             sum(f.ready) OVER (PARTITION BY f.queue)::bigint AS queue_ready,
             sum(f.running) OVER (PARTITION BY f.queue)::bigint AS queue_running
      FROM pgq.fair_keys f
      WHERE (sqlc.narg('queue')::text IS NULL OR f.queue = sqlc.narg('queue')::text)
        AND (sqlc.narg('key')::text IS NULL OR f.key = sqlc.narg('key')::text)) k
WHERE k.n <= @max::int
ORDER BY k.queue, k.n;
