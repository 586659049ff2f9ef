-- Operating pgq: the ordering linter (S16), queue statistics, and retention.

-- +goose Up
CREATE VIEW pgq.check_findings AS
SELECT NULL::text AS object, NULL::text AS rule, NULL::text AS detail, NULL::text AS fix
WHERE false;

COMMENT ON VIEW pgq.check_findings IS 'The row type of pgq.check (always empty itself): one problem per row.';

-- +goose StatementBegin
-- pgq._retry_window: seconds a job can spend between its first attempt and its last:
-- the backoffs of its tries - 1 retries (last entry repeating) plus tries × timeout.
-- NULL when tries is unlimited (0).
CREATE FUNCTION pgq._retry_window(p_tries int, p_backoff int[], p_timeout int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_tries = 0 THEN NULL ELSE
        coalesce((SELECT sum(p_backoff[least(n, cardinality(p_backoff))]) FROM generate_series(1, p_tries - 1) n), 0)
        + p_tries::bigint * p_timeout END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.check: the ordering linter (S16). One row per problem in the configured queues and
-- job classes, with the object, the rule, the numbers and the fix. worker_timeout and
-- worker_tries are the worker's --timeout and --tries, used where a class sets none.
CREATE FUNCTION pgq.check(worker_timeout int DEFAULT 60, worker_tries int DEFAULT 1)
RETURNS SETOF pgq.check_findings
LANGUAGE sql STABLE AS $$
    WITH classes AS (
        SELECT c.*, coalesce(c.timeout, worker_timeout) AS eff_timeout,
               coalesce(c.tries, worker_tries) AS eff_tries,
               coalesce(c.backoff, '{0}') AS eff_backoff,
               coalesce(q.retry_after, 90) AS retry_after,
               pgq._middleware(c.middleware, 'without_overlapping') AS overlap
        FROM pgq.job_classes c
        LEFT JOIN pgq.queues q ON q.name = c.queue
    )
    SELECT 'worker', 'timeout_zero',
           '--timeout 0 disables the handler timeout: a stuck handler holds its slot and its lease forever',
           'give the worker a timeout below the shortest retry_after (e.g. --timeout 60)'
    WHERE worker_timeout = 0
    UNION ALL
    SELECT 'queue ' || q.name, 'timeout_reaches_retry_after',
           format('worker --timeout %s >= retry_after %s: the lease can end while the handler still runs (equal is not safe: the lease starts first)',
                  worker_timeout, q.retry_after),
           format('raise retry_after (pgq.define_queue(%L, retry_after => %s)) or lower --timeout', q.name, worker_timeout * 3 / 2 + 10)
    FROM pgq.queues q
    WHERE worker_timeout >= q.retry_after
    UNION ALL
    SELECT 'job ' || c.name, 'timeout_zero',
           'timeout 0 disables the handler timeout for this job',
           format('pgq.define_job(%L, timeout => N) with N below retry_after %s', c.name, c.retry_after)
    FROM classes c WHERE c.timeout = 0
    UNION ALL
    SELECT 'job ' || c.name, 'timeout_reaches_retry_after',
           format('timeout %s >= retry_after %s of queue %s: the lease can end while the handler still runs',
                  c.eff_timeout, c.retry_after, c.queue),
           format('lower the timeout below %s, or raise the queue''s retry_after above %s', c.retry_after, c.eff_timeout)
    FROM classes c WHERE c.eff_timeout >= c.retry_after AND c.eff_timeout > 0
    UNION ALL
    SELECT 'job ' || c.name, 'unique_for_shorter_than_retries',
           CASE WHEN c.eff_tries = 0 THEN format('unique_for %s with unlimited tries: the lock expires while the job can still retry', c.unique_for)
                ELSE format('unique_for %s < backoffs + tries × timeout = %s s: the lock can expire during a backoff and let a second copy in',
                            c.unique_for, pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)) END,
           format('raise unique_for above %s s plus a realistic queue wait',
                  coalesce(pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)::text, 'the retry_for window'))
    FROM classes c
    WHERE c.unique_for IS NOT NULL
      AND (CASE WHEN c.eff_tries = 0 THEN c.retry_for IS NULL OR c.unique_for < c.retry_for
                ELSE extract(epoch FROM c.unique_for) < pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout) END)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_past_retry_for',
           format('backoffs of %s retries add up to %s s, past retry_for %s: the last attempt is picked up after the deadline and fails with MaxAttemptsExceeded instead of its own exception',
                  c.eff_tries - 1, pgq._retry_window(c.eff_tries, c.eff_backoff, 0), c.retry_for),
           'shorten the backoffs or lengthen retry_for'
    FROM classes c
    WHERE c.retry_for IS NOT NULL AND c.eff_tries > 1
      AND pgq._retry_window(c.eff_tries, c.eff_backoff, 0) > extract(epoch FROM c.retry_for)
    UNION ALL
    SELECT 'job ' || c.name, 'expire_after_outside_timeout_retry_after',
           format('without_overlapping expire_after %s is not between timeout %s and retry_after %s',
                  c.overlap ->> 'expire_after', c.eff_timeout, c.retry_after),
           format('set expire_after above %s (the lock must outlive the handler) and below %s (a killed worker''s lock must be gone before its job comes back)',
                  c.eff_timeout, c.retry_after)
    FROM classes c
    WHERE c.overlap ? 'expire_after'
      AND NOT ((c.overlap ->> 'expire_after')::int > c.eff_timeout AND (c.overlap ->> 'expire_after')::int < c.retry_after)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_longer_than_tries',
           format('backoff has %s entries but tries %s allows only %s retries: the last %s are never used',
                  cardinality(c.backoff), c.eff_tries, c.eff_tries - 1, cardinality(c.backoff) - (c.eff_tries - 1)),
           'trim the backoff or raise tries'
    FROM classes c
    WHERE c.backoff IS NOT NULL AND c.eff_tries > 0 AND cardinality(c.backoff) > c.eff_tries - 1 AND cardinality(c.backoff) > 1
    UNION ALL
    SELECT 'job ' || c.name, 'uneven_backoff_behind_release_middleware',
           format('backoff %s is not flat, and release-based middleware (%s) moves the backoff index: the first real failure can wait %s s',
                  c.backoff, (SELECT string_agg(k, ', ') FROM jsonb_array_elements(c.middleware) m, jsonb_object_keys(m) k
                              WHERE k IN ('without_overlapping', 'rate_limited')),
                  (SELECT max(b) FROM unnest(c.backoff) b)),
           'use a flat backoff (one value) for jobs behind without_overlapping or rate_limited'
    FROM classes c
    WHERE cardinality(c.backoff) > 1
      AND (SELECT count(DISTINCT b) FROM unnest(c.backoff) b) > 1
      AND EXISTS (SELECT FROM jsonb_array_elements(c.middleware) m
                  WHERE m ? 'rate_limited' OR (m ? 'without_overlapping' AND NOT coalesce((m -> 'without_overlapping' ->> 'dont_release')::boolean, false)))
    ORDER BY 1, 2;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.check(int, int) IS
    'The ordering linter (S16): one row per problem in queues and job classes (object, rule, detail, fix), given the worker''s --timeout and --tries.';

CREATE VIEW pgq.queue_stats AS
SELECT q.queue,
       count(j.id) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()) AS ready,
       count(j.id) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0) AS scheduled,
       count(j.id) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0) AS retrying,
       count(j.id) FILTER (WHERE j.reserved_at IS NOT NULL) AS running,
       (SELECT count(*) FROM pgq.failed_jobs f WHERE f.queue = q.queue) AS failed,
       coalesce(now() - min(j.available_at) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()),
                interval '0')::interval AS oldest_wait
FROM (SELECT name AS queue FROM pgq.queues
      UNION SELECT DISTINCT queue FROM pgq.jobs
      UNION SELECT DISTINCT queue FROM pgq.failed_jobs) q
LEFT JOIN pgq.jobs j ON j.queue = q.queue
GROUP BY q.queue;

COMMENT ON VIEW pgq.queue_stats IS 'How far behind each queue is: jobs ready now and how long the oldest has waited, scheduled, retrying, running, failed.';

-- +goose StatementBegin
-- pgq.prune_all: retention. Deletes attempt history of finished jobs older than
-- history_older_than and failed jobs older than failed_older_than (NULL: keep), plus
-- expired unique locks and stale overlap-lock rows. Only one caller at a time does the
-- work (a transaction advisory lock); the others return NULL at once, so workers can
-- all call it without piling up. Returns the rows deleted.
CREATE FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count bigint := 0;
    v_n     bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('pgq.prune_all', 0)) THEN
        RETURN NULL;
    END IF;
    v_count := pgq.prune(prune_all.history_older_than);
    IF prune_all.failed_older_than IS NOT NULL THEN
        v_count := v_count + pgq.flush_failed(prune_all.failed_older_than);
    END IF;
    DELETE FROM pgq.unique_locks u WHERE u.expires_at < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.overlap_locks o WHERE NOT pgq._lock_held(o.pid, o.lock_id);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_count + v_n;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.prune_all(interval, interval) IS
    'Retention: prunes finished history, old failed jobs (when failed_older_than is given), expired unique locks and stale overlap rows; one caller at a time (others get NULL).';

-- +goose Down
DROP FUNCTION pgq.prune_all(interval, interval);
DROP VIEW pgq.queue_stats;
DROP FUNCTION pgq.check(int, int);
DROP FUNCTION pgq._retry_window(int, int[], int);
DROP VIEW pgq.check_findings;
