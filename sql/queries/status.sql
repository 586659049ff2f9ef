-- name: QueueStatsList :many
SELECT * FROM pgq.queue_stats ORDER BY queue;

-- name: CheckList :many
-- queues NULL: every finding; else those about these queues and the workers' settings.
SELECT * FROM pgq.check(worker_timeout => @worker_timeout::int, worker_tries => @worker_tries::int,
                        queues => sqlc.narg('queues')::text[]);

-- name: RetentionPrune :one
-- NULL from pgq.prune_all: another caller is pruning, and this call pruned nothing.
SELECT coalesce(pgq.prune_all(history_older_than => @history_older_than::interval,
                              failed_older_than => sqlc.narg('failed_older_than')::interval), 0)::bigint AS pruned;

-- name: ConcurrencyStatsList :many
-- Each named concurrency limit's handlers running, over all its keys, and its limit
-- (the metric pgq_concurrency_running).
SELECT l.name, sum(l.used)::bigint AS running, max(l.max)::int AS max_per_key
FROM pgq.limits l
WHERE l.kind = 'concurrency' AND l.max IS NOT NULL
GROUP BY l.name
ORDER BY l.name;

-- name: BatchStatsList :many
-- Batches by state, with their members by state (the metrics: pgq_batches,
-- pgq_batch_jobs).
SELECT b.state, count(*)::bigint AS batches,
       coalesce(sum(b.unfinished_jobs), 0)::bigint AS unfinished, coalesce(sum(b.succeeded_jobs), 0)::bigint AS succeeded,
       coalesce(sum(b.failed_jobs), 0)::bigint AS failed, coalesce(sum(b.cancelled_jobs), 0)::bigint AS cancelled
FROM pgq.batches b
GROUP BY b.state
ORDER BY b.state;

-- name: StalledCountList :many
-- Stalled chains and batches by kind (S95).
SELECT s.kind, count(*)::bigint AS stalled FROM pgq.stalled s GROUP BY s.kind ORDER BY s.kind;
