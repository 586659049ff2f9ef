-- What the workflows show (S95, S97): every job of a batch in one relation, and the
-- chains and batches that stalled. Read by the dashboard, `pgq-worker check` (through
-- pgq.check), the worker's metrics and psql.

-- pgq.batch_jobs: every job of a batch (its lone jobs and its chains' steps; not its
-- callbacks, which are in pgq.callbacks), live, failed or ended, with its state: ready,
-- scheduled, retrying and running (the conditions of the views of those names), failed
-- (pgq.failed_jobs: it can be retried), succeeded or cancelled (pgq.job_ends; the job
-- name, queue and last attempt come from pgq.attempts while its history is kept: ''
-- and 0 once pruned). A
-- failed job that was forgotten no longer shows; the batch's counters still count it.
-- at is when the job reached its state as far as the lists go: available_at for a live
-- job, failed_at, ended_at; sort breaks ties (the row's id in its table). Read it by
-- batch_id and state, in (at, sort) order: each state has an index in that order.
CREATE OR REPLACE VIEW pgq.batch_jobs AS
SELECT j.batch_id, j.chain_id, j.chain_step, j.uuid, j.job, j.queue, 'running'::text AS state,
       j.available_at AS at, j.id AS sort, j.attempts, j.last_exception AS exception, j.reserved_by AS worker,
       j.started_at
FROM pgq.jobs j
WHERE j.batch_id IS NOT NULL AND j.reserved_at IS NOT NULL
  AND j.reserved_until IS NOT NULL  -- every reserved job has a lease end: jobs_lease_idx holds only the reserved
UNION ALL
SELECT j.batch_id, j.chain_id, j.chain_step, j.uuid, j.job, j.queue, 'ready',
       j.available_at, j.id, j.attempts, j.last_exception, NULL, NULL
FROM pgq.jobs j
WHERE j.batch_id IS NOT NULL AND j.reserved_at IS NULL AND j.available_at <= now()
UNION ALL
SELECT j.batch_id, j.chain_id, j.chain_step, j.uuid, j.job, j.queue, 'scheduled',
       j.available_at, j.id, j.attempts, j.last_exception, NULL, NULL
FROM pgq.jobs j
WHERE j.batch_id IS NOT NULL AND j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0
UNION ALL
SELECT j.batch_id, j.chain_id, j.chain_step, j.uuid, j.job, j.queue, 'retrying',
       j.available_at, j.id, j.attempts, j.last_exception, NULL, NULL
FROM pgq.jobs j
WHERE j.batch_id IS NOT NULL AND j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0
UNION ALL
SELECT f.batch_id, f.chain_id, f.chain_step, f.uuid, f.job, f.queue, 'failed',
       f.failed_at, f.id, f.attempts, f.exception, NULL, NULL
FROM pgq.failed_jobs f
WHERE f.batch_id IS NOT NULL
UNION ALL
SELECT e.batch_id, e.chain_id, e.chain_step, e.job_uuid, coalesce(a.job, ''), coalesce(a.queue, ''), e.outcome,
       e.ended_at, e.id, coalesce(a.attempt, 0), e.exception, a.worker, a.started_at
FROM pgq.job_ends e
LEFT JOIN LATERAL (SELECT a.job, a.queue, a.attempt, a.worker, a.started_at
                   FROM pgq.attempts a WHERE a.job_uuid = e.job_uuid ORDER BY a.id DESC LIMIT 1) a ON true
WHERE e.batch_id IS NOT NULL AND e.outcome IN ('succeeded', 'cancelled');

COMMENT ON VIEW pgq.batch_jobs IS
    'Every job of a batch (lone jobs and chain steps), live, failed or ended, with its state (ready, scheduled, retrying, running, failed, succeeded, cancelled); read it by batch_id and state in (at, sort) order (S97).';

-- pgq.stalled: chains and batches that wait without moving (S95). A batch is stalled
-- when it has not finished, one of its jobs has been ready (waiting and available) for
-- longer than its queue's retry_after, none of its jobs is running, and none ended in
-- that time. A chain outside a batch is stalled when its running step's job has been
-- ready that long (a chain's steps run one at a time; a chain in a batch stalls with
-- its batch): found from the jobs that waited longer than the shortest retry_after
-- (jobs_chain_wait_idx), so the running chains that move cost nothing. job is the job
-- that waits longest, queue its queue (paused: the queue is paused), last_end the last
-- end of one of the batch's jobs.
CREATE OR REPLACE VIEW pgq.stalled AS
WITH running AS (  -- the batches with a job reserved now: few rows, found by jobs_lease_idx
    SELECT DISTINCT j.batch_id FROM pgq.jobs j WHERE j.reserved_until IS NOT NULL AND j.batch_id IS NOT NULL
)
SELECT 'batch'::text AS kind, b.id, b.name, w.uuid AS job_uuid, w.job, w.queue, w.available_at AS waiting_since,
       w.retry_after, w.paused, e.last_end
FROM pgq.job_batches b
CROSS JOIN LATERAL (
    SELECT j.uuid, j.job, j.queue, j.available_at, coalesce(q.retry_after, pgq._default_retry_after()) AS retry_after,
           coalesce(q.paused, false) AS paused
    FROM pgq.jobs j
    LEFT JOIN pgq.queues q ON q.name = j.queue
    WHERE j.batch_id = b.id AND j.reserved_at IS NULL AND j.available_at <= now()
    ORDER BY j.available_at, j.id
    LIMIT 1
) w
CROSS JOIN LATERAL (
    SELECT greatest((SELECT max(x.ended_at) FROM pgq.job_ends x WHERE x.batch_id = b.id AND x.outcome = 'succeeded'),
                    (SELECT max(x.ended_at) FROM pgq.job_ends x WHERE x.batch_id = b.id AND x.outcome = 'failed'),
                    (SELECT max(x.ended_at) FROM pgq.job_ends x WHERE x.batch_id = b.id AND x.outcome = 'cancelled'))::timestamptz AS last_end
) e
WHERE b.finished_at IS NULL
  AND w.available_at < now() - make_interval(secs => w.retry_after)
  AND NOT EXISTS (SELECT FROM running r WHERE r.batch_id = b.id)
  AND (e.last_end IS NULL OR e.last_end < now() - make_interval(secs => w.retry_after))
UNION ALL
SELECT 'chain', c.id, NULL, j.uuid, j.job, j.queue, j.available_at,
       coalesce(q.retry_after, pgq._default_retry_after()), coalesce(q.paused, false), NULL::timestamptz
FROM pgq.jobs j
JOIN pgq.job_chains c ON c.id = j.chain_id AND c.job_uuid = j.uuid
LEFT JOIN pgq.queues q ON q.name = j.queue
WHERE j.chain_id IS NOT NULL AND j.batch_id IS NULL AND j.reserved_at IS NULL  -- jobs_chain_wait_idx
  AND j.available_at < now() - make_interval(secs => (SELECT least(pgq._default_retry_after(), min(x.retry_after)) FROM pgq.queues x))
  AND j.chain_step > 0 AND c.state = 'running'
  AND j.available_at < now() - make_interval(secs => coalesce(q.retry_after, pgq._default_retry_after()));

COMMENT ON VIEW pgq.stalled IS
    'Chains and batches that wait without moving: a job ready for longer than its queue''s retry_after while none of theirs runs or ended in that time (S95).';
