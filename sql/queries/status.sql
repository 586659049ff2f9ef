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
