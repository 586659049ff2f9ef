-- name: QueueStatsList :many
SELECT * FROM pgq.queue_stats ORDER BY queue;

-- name: CheckList :many
SELECT * FROM pgq.check(worker_timeout => @worker_timeout::int, worker_tries => @worker_tries::int);

-- name: RetentionPrune :one
-- NULL from pgq.prune_all: another caller is pruning, and this call pruned nothing.
SELECT coalesce(pgq.prune_all(history_older_than => @history_older_than::interval,
                              failed_older_than => sqlc.narg('failed_older_than')::interval), 0)::bigint AS pruned;
