-- name: QueueStatusList :many
-- One row per queue that has jobs or a definition: what waits, what runs, what failed.
SELECT
    q.queue::text AS queue,
    count(*) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now())::bigint AS ready,
    count(*) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0)::bigint AS scheduled,
    count(*) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0)::bigint AS retrying,
    count(*) FILTER (WHERE j.reserved_at IS NOT NULL)::bigint AS running,
    (SELECT count(*) FROM pgq.failed_jobs f WHERE f.queue = q.queue)::bigint AS failed,
    coalesce(extract(epoch FROM now() - min(j.available_at) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now())), 0)::float8 AS oldest_wait_seconds
FROM (SELECT name AS queue FROM pgq.queues UNION SELECT DISTINCT queue FROM pgq.jobs UNION SELECT DISTINCT queue FROM pgq.failed_jobs) q
LEFT JOIN pgq.jobs j ON j.queue = q.queue
GROUP BY q.queue
ORDER BY q.queue;
