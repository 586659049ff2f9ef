-- Views for psql: each answers one question. A payload shows only to a member of the
-- payload reader role (pgq_payload_reader, or its name in pgq.roles; superusers are
-- members of every role, and migrate makes the owner one, for its SECURITY DEFINER
-- functions): pgq_reader alone sees NULL (S45).

-- The live jobs are read through pgq.live_jobs, which lists every waiting or running job
-- however it is kept (29_storage.sql); payload there shows only to payload readers.

-- pgq.ready: ORDER BY queue, priority DESC, available_at, sort_id, id lists the jobs in
-- the order the reserves take them (S30), and reads them through the queue's indexes.
CREATE OR REPLACE VIEW pgq.ready AS
SELECT l.queue, l.priority, l.id, l.uuid, l.job, l.attempts, l.available_at,
       now() - l.available_at AS waiting_for, l.wait_reason, l.payload, l.sort_id
FROM pgq.live_jobs l
WHERE l.reserved_at IS NULL AND l.available_at <= now();

COMMENT ON VIEW pgq.ready IS 'Jobs a worker may reserve now; ORDER BY queue, priority DESC, available_at, sort_id, id is the order the reserves take them in (S30).';

CREATE OR REPLACE VIEW pgq.scheduled AS
SELECT l.queue, l.id, l.uuid, l.job, l.available_at, l.available_at - now() AS due_in, l.created_at, l.payload
FROM pgq.live_jobs l
WHERE l.reserved_at IS NULL AND l.available_at > now() AND l.attempts = 0;

COMMENT ON VIEW pgq.scheduled IS 'Jobs waiting out a dispatch delay (never attempted yet).';

CREATE OR REPLACE VIEW pgq.retrying AS
SELECT l.queue, l.id, l.uuid, l.job, l.attempts, l.tries, l.wait_reason, l.available_at,
       l.available_at - now() AS due_in, l.last_exception_attempt, l.last_exception, l.payload
FROM pgq.live_jobs l
WHERE l.reserved_at IS NULL AND l.available_at > now() AND l.attempts > 0;

COMMENT ON VIEW pgq.retrying IS 'Jobs waiting to be attempted again: a backoff after an exception, or a release (wait_reason says which).';

CREATE OR REPLACE VIEW pgq.running AS
SELECT l.queue, l.id, l.uuid, l.job, l.attempts, l.reserved_by AS worker, l.reserved_at, l.started_at,
       l.reserved_until AS lease_until, l.reserved_until < now() AS lease_expired, l.payload
FROM pgq.live_jobs l
WHERE l.reserved_at IS NOT NULL;

COMMENT ON VIEW pgq.running IS 'Reserved jobs: which worker runs them and until when their lease lasts.';

CREATE OR REPLACE VIEW pgq.locks AS
SELECT 'unique'::text AS kind, u.key, u.job_uuid, u.owner AS token, u.created_at AS since, u.expires_at,
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = u.job_uuid) AS job_exists, NULL::text AS worker
FROM pgq.unique_locks u
UNION ALL
SELECT 'debounce', d.key, d.job_uuid, d.token, d.updated_at, NULL,
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = d.job_uuid), NULL
FROM pgq.debounce_tokens d
UNION ALL
SELECT 'overlap', o.key, o.job_uuid, NULL::uuid, o.since, o.expires_at,
       EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = o.job_uuid), o.worker
FROM pgq.overlap_locks o
WHERE o.expires_at > now();

COMMENT ON VIEW pgq.locks IS 'Held locks: unique locks (key, owner job, expiry, whether the owner job still exists), current debounce tokens, and unexpired without_overlapping leases (worker, since when, until when unless renewed; no token: an overlap lease''s token is its job''s lease token).';

CREATE OR REPLACE VIEW pgq.limits AS
SELECT 'rate_limit'::text AS kind, r.name, coalesce(w.key, r.name) AS key, r.max, r.per,
       CASE WHEN w.window_start + r.per > now() THEN w.hits ELSE 0 END AS used,
       CASE WHEN w.window_start + r.per > now() THEN w.window_start + r.per END AS resets_at,
       CASE WHEN w.window_start + r.per > now() AND w.hits >= r.max THEN 'exhausted' ELSE 'available' END AS state,
       NULL::text AS last_exception
FROM pgq.rate_limits r
LEFT JOIN pgq.rate_limit_windows w ON w.limit_name = r.name
UNION ALL
SELECT 'circuit', c.key, c.key, c.max_exceptions, make_interval(secs => c.decay),
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() THEN c.failures ELSE 0 END,
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() THEN c.window_start + make_interval(secs => c.decay) END,
       CASE WHEN c.window_start + make_interval(secs => c.decay) > now() AND c.failures >= c.max_exceptions
            THEN 'open' ELSE 'closed' END,
       c.last_exception
FROM pgq.circuits c
UNION ALL
-- concurrency_limited (S99): a named limit with its keys in use (or none), and each key
-- of a per-class limit while it runs or has jobs waiting; full when its handlers are at
-- the limit or jobs wait for it. A named limit's keys are '@' and its name, then ':'
-- and the by values as a JSON array when it has by; no name holds '['.
SELECT 'concurrency', coalesce(l.name, k.name), coalesce(k.key, '@' || l.name), l."limit", NULL,
       coalesce(k.running, 0)::int, NULL,
       CASE WHEN k.running >= l."limit" OR k.waiting > 0 THEN 'full' ELSE 'available' END, NULL
FROM (SELECT u.key, CASE WHEN u.key LIKE '@%' THEN split_part(substr(u.key, 2), ':[', 1) ELSE min(u.job) END AS name,
             sum(u.running) AS running, sum(u.waiting) AS waiting
      FROM (SELECT regexp_replace(substr(o.key, 2), '#[0-9]+$', '') AS key, j.job, 1 AS running, 0 AS waiting
            FROM pgq.overlap_locks o LEFT JOIN pgq.jobs j ON j.uuid = o.job_uuid
            WHERE o.key LIKE '#%' AND o.expires_at > now()
            UNION ALL
            SELECT j.waits_on, j.job, 0, 1 FROM pgq.jobs j WHERE j.waits_on IS NOT NULL AND j.reserved_at IS NULL) u
      GROUP BY u.key) k
FULL JOIN pgq.concurrency_limits l ON k.key LIKE '@%' AND l.name = k.name;

COMMENT ON VIEW pgq.limits IS 'Each rate limit''s budget in its current window (used of max, when it resets), each circuit''s state (open: jobs are turned away until resets_at + 3 s), and each concurrency limit''s handlers running per key (used of max; max is NULL for a limit a class sets per key, S99).';

CREATE OR REPLACE VIEW pgq.failed AS
SELECT f.id, f.uuid, f.job, f.queue, f.attempts, f.failed_at, f.exception,
       CASE WHEN (SELECT pgq._sees_payloads()) THEN f.payload END AS payload,
       (SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                   'attempt', a.attempt, 'outcome', a.outcome, 'worker', a.worker,
                   'finished_at', a.finished_at, 'exception', a.exception, 'delay', a.delay,
                   'detail', a.exception_detail, 'hint', a.exception_hint))
               ORDER BY a.id)
        FROM pgq.attempts a WHERE a.job_uuid = f.uuid) AS history,
       f.exception_detail, f.exception_hint
FROM pgq.failed_jobs f;

COMMENT ON VIEW pgq.failed IS 'Failed jobs with every previous attempt (outcome and exception, with its detail and hint when it had them) as history; the final exception''s DETAIL and HINT (S88).';

-- pgq.live_workers: the workers running now (S87): each one's queues, the job names it
-- has Go handlers for, its version, when it started and when it last said so.
CREATE OR REPLACE VIEW pgq.live_workers AS
SELECT w.name, w.queues, w.handlers, w.version, w.started_at, w.seen_at
FROM pgq.workers w
WHERE w.seen_at > now() - pgq._worker_ttl();

COMMENT ON VIEW pgq.live_workers IS 'Workers seen in the last minute: the queues each serves, its Go handlers'' job names, its version (S87).';

CREATE OR REPLACE VIEW pgq.queue_stats AS
SELECT q.queue,
       coalesce(sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()), 0)::bigint AS ready,
       coalesce(sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0), 0)::bigint AS scheduled,
       coalesce(sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0), 0)::bigint AS retrying,
       coalesce(sum(j.n) FILTER (WHERE j.reserved_at IS NOT NULL), 0)::bigint AS running,
       (SELECT count(*) FROM pgq.failed_jobs f WHERE f.queue = q.queue) AS failed,
       coalesce(now() - min(j.available_at) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()),
                interval '0')::interval AS oldest_wait
FROM (SELECT name AS queue FROM pgq.queues
      UNION SELECT DISTINCT queue FROM pgq._live_counted
      UNION SELECT DISTINCT queue FROM pgq.failed_jobs) q
LEFT JOIN pgq._live_counted j ON j.queue = q.queue
GROUP BY q.queue;

COMMENT ON VIEW pgq.queue_stats IS 'How far behind each queue is: jobs ready now and how long the oldest has waited, scheduled, retrying, running, failed.';

-- pgq.fair_keys: the keys of fair queues that have live jobs (S119): each one's weight,
-- its jobs ready now and how long the oldest has waited, waiting later (scheduled or
-- retrying), running, and its pass (the order of turns: lowest first; NULL: a turn is
-- being made or ended).
CREATE OR REPLACE VIEW pgq.fair_keys AS
SELECT j.queue, j.fair_key AS key, coalesce(w.weight, 1) AS weight,
       count(*) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()) AS ready,
       coalesce(now() - min(j.available_at) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()),
                interval '0')::interval AS oldest_wait,
       count(*) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now()) AS later,
       count(*) FILTER (WHERE j.reserved_at IS NOT NULL) AS running,
       t.pass, t.parked_until
FROM pgq.jobs j
LEFT JOIN pgq.fair_weights w ON w.queue = j.queue AND w.key = j.fair_key
LEFT JOIN pgq.fair_turns t ON t.queue = j.queue AND t.key = j.fair_key
WHERE j.fair_key IS NOT NULL
GROUP BY j.queue, j.fair_key, w.weight, t.pass, t.parked_until;

COMMENT ON VIEW pgq.fair_keys IS 'Keys of fair queues with live jobs: weight, ready jobs and the oldest one''s wait, waiting later, running, the pass that orders their turns, and until when a key with nothing ready is set aside (S119, S125).';
