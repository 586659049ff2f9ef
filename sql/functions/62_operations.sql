-- Operating the queue: run now, failed jobs (S20), retention, the ordering linter (S16).

-- pgq.run_now: a waiting job (delay or backoff) becomes available immediately (S20).
-- A job that is available already keeps its place in the queue: setting its
-- available_at to now() would put it behind every job dispatched since.
-- Returns false when no waiting job has that uuid. Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.run_now(uuid uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job pgq.jobs := pgq._job_for_update(run_now.uuid);
BEGIN
    IF v_job.id IS NULL OR v_job.reserved_at IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE pgq.jobs j
    SET available_at = least(j.available_at, now()),
        wait_reason = CASE WHEN j.available_at > now() THEN 'run_now' ELSE j.wait_reason END
    WHERE j.uuid = v_job.uuid;
    PERFORM pgq._record_action('run_now', v_job.uuid, v_job.queue);
    PERFORM pg_notify('pgq_jobs', v_job.queue);
    RETURN true;
END;
$$;

COMMENT ON FUNCTION pgq.run_now(uuid) IS 'Makes a waiting job available now (S20); false when there is no such waiting job.';

-- pgq._retry_failed_ids: puts the failed jobs of these pgq.failed_jobs ids back on their
-- queues with attempts reset and their settings as dispatched; the attempt history is
-- kept (S20). A deadline is moved by the time the job spent since dispatch, so the job
-- gets its whole retry window again. A job that a concurrent retry or flush takes first
-- is skipped, so each is requeued once. Each is recorded in pgq.actions, with p_detail.
-- A job of a chain resumes the chain at its step; a job of a batch counts as pending
-- again there, and no longer as failed (S73). Returns the uuids requeued, oldest failure
-- first. State change: failed -> waiting.
CREATE OR REPLACE FUNCTION pgq._retry_failed_ids(p_ids bigint[], p_detail text DEFAULT NULL) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uuids  uuid[];
    v_queues text[];
    v_grouped uuid[];  -- jobs of batches or chains, with theirs (S73)
    v_batches uuid[];
    v_chains  uuid[];
    v_steps   int[];
BEGIN
    -- Their queues' fair_by is read under its lock (pgq._fair_by, S114).
    PERFORM pgq._fair_by(f.queue) FROM (SELECT DISTINCT f.queue FROM pgq.failed_jobs f WHERE f.id = ANY (p_ids) ORDER BY 1) f;
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE f.id = ANY (p_ids)
        RETURNING f.*
    ), back AS (
        -- The unique token comes back but not the lock (released when the job failed):
        -- every release is owner-checked, so this copy can never free another's lock (S22).
        -- A debounced job comes back without its token (also released): retrying it is a
        -- deliberate act, so it runs instead of being debounced at pickup.
        INSERT INTO pgq.jobs AS j
            (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, unique_key, unique_token, unique_until, debounce_key, debounce_token,
             middleware, wait_reason, batch_id, chain_id, chain_step, slot, fair_key)
        SELECT g.uuid, g.job, g.queue, g.payload, g.priority,
               -- a handler dropped since the job failed: the class's current one
               CASE WHEN EXISTS (SELECT FROM pg_proc p WHERE p.oid = g.handler) THEN g.handler
                    ELSE (SELECT c.handler FROM pgq.job_classes c WHERE c.name = g.job) END,
               g.tries, g.backoff, g.max_exceptions,
               g.timeout, g.fail_on_timeout, now() + (g.retry_until - g.dispatched_at), g.unique_key, g.unique_token,
               g.unique_until, NULL, NULL, g.middleware, 'retried', g.batch_id, g.chain_id, g.chain_step, pgq._slot(),
               CASE WHEN q.fair_by IS NOT NULL THEN coalesce(g.payload ->> q.fair_by, '') END  -- S114
        FROM gone g
        LEFT JOIN pgq.queues q ON q.name = g.queue
        ORDER BY g.id
        RETURNING j.uuid, j.queue, j.batch_id, j.chain_id, j.chain_step
    ), recorded AS (
        INSERT INTO pgq.actions (actor, action, job_uuid, queue, detail)
        SELECT session_user, 'retry', b.uuid, b.queue, p_detail FROM back b
    )
    SELECT coalesce(array_agg(b.uuid), '{}'), coalesce(array_agg(DISTINCT b.queue), '{}'),
           array_agg(b.uuid) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.batch_id) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.chain_id) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.chain_step) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL)
    INTO v_uuids, v_queues, v_grouped, v_batches, v_chains, v_steps
    FROM back b;
    IF v_grouped IS NOT NULL THEN
        -- a chain goes on from the retried step; its batch counts the member pending again
        PERFORM pgq._jobs_retried(v_grouped, v_batches, v_chains, v_steps);
    END IF;

    -- The keys of fair queues get their turns (S115).
    PERFORM pgq._fair_enter(j.queue, array_agg(j.fair_key))
    FROM pgq.jobs j WHERE j.uuid = ANY (v_uuids) AND j.fair_key IS NOT NULL GROUP BY j.queue;
    PERFORM pg_notify('pgq_jobs', q) FROM unnest(v_queues) q;
    RETURN QUERY SELECT unnest(v_uuids);
END;
$$;

COMMENT ON FUNCTION pgq._retry_failed_ids(bigint[], text) IS
    'Requeues the failed jobs of these pgq.failed_jobs ids with attempts reset, recorded in pgq.actions; chains resume, batches count them pending (S20, S73).';

-- pgq.retry_failed: puts failed jobs back on their queue with attempts reset
-- (pgq._retry_failed_ids, S20). uuid NULL retries every failed job matching the filters
-- given (queue, job, failed more than older_than ago), oldest failure first. Returns the
-- uuids requeued. A job of a chain resumes the chain at its step; a job of a batch
-- counts as pending again there, and no longer as failed (S73).
-- State change: failed -> waiting.
CREATE OR REPLACE FUNCTION pgq.retry_failed(
    uuid uuid, queue text DEFAULT NULL, job text DEFAULT NULL, older_than interval DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgq._retry_failed_ids(ARRAY(
        SELECT f.id FROM pgq.failed_jobs f
        WHERE (retry_failed.uuid IS NULL OR f.uuid = retry_failed.uuid)
          AND (retry_failed.queue IS NULL OR f.queue = retry_failed.queue)
          AND (retry_failed.job IS NULL OR f.job = retry_failed.job)
          AND (retry_failed.older_than IS NULL OR f.failed_at < now() - retry_failed.older_than)
        ORDER BY f.id));
$$;

COMMENT ON FUNCTION pgq.retry_failed(uuid, text, text, interval) IS
    'Requeues a failed job (or, uuid NULL, all matching queue, job and older_than) with attempts reset; history kept (S20).';

-- pgq.retry_batch_failed: puts every failed job of a batch (its lone jobs and its
-- chains' steps) back on its queue, as pgq.retry_failed does each (S96): the batch
-- counts them pending again and is no longer finished, a chain resumes at the failed
-- step, and a then_job that has not run runs if they all succeed. Each is recorded in
-- pgq.actions as a retry, with the batch in its detail. Returns the uuids requeued
-- (none when nothing failed). Raises P0002 when there is no such batch, and PQ003 when
-- the batch was cancelled (its retried jobs would be cancelled before they run, S74):
-- checked again under the batch's row lock after the retry, so a cancel that commits
-- meanwhile rolls the retry back.
CREATE OR REPLACE FUNCTION pgq.retry_batch_failed(batch uuid) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uuids     uuid[];
    v_cancelled timestamptz;
BEGIN
    SELECT b.cancelled_at INTO v_cancelled FROM pgq.job_batches b WHERE b.id = retry_batch_failed.batch;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: no batch %', retry_batch_failed.batch USING ERRCODE = 'P0002';
    END IF;
    IF v_cancelled IS NULL THEN
        v_uuids := ARRAY(SELECT pgq._retry_failed_ids(
            ARRAY(SELECT f.id FROM pgq.failed_jobs f WHERE f.batch_id = retry_batch_failed.batch ORDER BY f.id),
            format('with batch %s', retry_batch_failed.batch)));
        -- The retry locked the batch's shards, then its row (pgq._jobs_retried): a cancel
        -- that committed meanwhile is seen now.
        SELECT b.cancelled_at INTO v_cancelled FROM pgq.job_batches b WHERE b.id = retry_batch_failed.batch;
    END IF;
    IF v_cancelled IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: batch % was cancelled: a retried job would be cancelled before it runs', retry_batch_failed.batch
            USING ERRCODE = 'PQ003', HINT = 'dispatch the failed jobs again in a new batch';
    END IF;
    RETURN QUERY SELECT unnest(v_uuids);
END;
$$;

COMMENT ON FUNCTION pgq.retry_batch_failed(uuid) IS
    'Requeues every failed job of a batch as pgq.retry_failed does (S96); P0002 when there is no such batch, PQ003 when it was cancelled. Returns the uuids requeued.';

-- pgq.forget_failed: deletes one failed job. Returns false when there was none.
-- Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.forget_failed(uuid uuid) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (DELETE FROM pgq.failed_jobs f WHERE f.uuid = forget_failed.uuid RETURNING f.uuid, f.queue),
         recorded AS (INSERT INTO pgq.actions (actor, action, job_uuid, queue)
                      SELECT session_user, 'forget', g.uuid, g.queue FROM gone g)
    SELECT EXISTS (SELECT FROM gone);
$$;

COMMENT ON FUNCTION pgq.forget_failed(uuid) IS 'Deletes one failed job (S20); false when there was none.';

-- pgq.flush_failed: deletes the failed jobs matching every filter given (failed more than
-- older_than ago, of queue, of job; no filter: all). Returns how many were deleted; a job
-- that a concurrent flush or retry takes first is not counted here. Recorded in
-- pgq.actions (one row, with the filters and the count).
CREATE OR REPLACE FUNCTION pgq.flush_failed(older_than interval DEFAULT NULL, queue text DEFAULT NULL, job text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE (flush_failed.older_than IS NULL OR f.failed_at < now() - flush_failed.older_than)
          AND (flush_failed.queue IS NULL OR f.queue = flush_failed.queue)
          AND (flush_failed.job IS NULL OR f.job = flush_failed.job)
        RETURNING 1
    ), counted AS (
        SELECT count(*) AS n FROM gone
    ), recorded AS (
        INSERT INTO pgq.actions (actor, action, queue, detail)
        SELECT session_user, 'flush', flush_failed.queue,
               format('%s failed jobs deleted (job %s, older than %s)', c.n, coalesce(flush_failed.job, 'any'),
                      coalesce(flush_failed.older_than::text, 'any age'))
        FROM counted c
    )
    SELECT n FROM counted;
$$;

COMMENT ON FUNCTION pgq.flush_failed(interval, text, text) IS 'Deletes the failed jobs matching older_than, queue and job (none given: all, S20); returns the count.';

-- pgq.prune: deletes attempt history of jobs that are finished (no longer live or failed)
-- and finished more than older_than ago. Returns how many attempt rows were deleted.
CREATE OR REPLACE FUNCTION pgq.prune(older_than interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_count bigint;
BEGIN
    IF prune.older_than IS NULL OR prune.older_than < interval '0' THEN
        RAISE EXCEPTION 'pgq: prune older_than must be a non-negative interval, got %', prune.older_than
            USING ERRCODE = '22023';
    END IF;
    -- A live job's turn-aways go too (S39): a job turned away for weeks would otherwise
    -- grow its history without bound; pgq.jobs.turn_aways keeps their count.
    WITH gone AS (
        DELETE FROM pgq.attempts a
        WHERE a.finished_at < now() - prune.older_than
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.uuid = a.job_uuid)
          AND (a.outcome = 'turned_away' OR NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = a.job_uuid))
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION pgq.prune(interval) IS 'Deletes attempt history older than older_than of jobs no longer live or failed, and old turn-aways of live jobs; returns the count.';

-- pgq.prune_all: retention (S39). Deletes attempt history of finished jobs (and the
-- turn-aways of live ones) older than history_older_than, failed jobs older than
-- failed_older_than (NULL: keep), and the coordination rows that no longer say anything:
-- expired unique locks and overlap leases, rate-limit windows that have ended, circuits
-- whose decay has passed, debounce tokens whose job is gone (an hour after their last
-- dispatch), marks to run alone whose job is gone (S111), workers not seen for a day,
-- and batches and chains that ended more than history_older_than ago. Each of
-- these deletes re-reads the row it deletes, so a row a concurrent dispatch or reserve
-- just renewed stays; a window a reserve holds is left for the next call (S82). Only one
-- caller at a time does the work (a transaction advisory lock); the others return NULL
-- at once, so workers can all call it without piling up. Returns the rows deleted.
CREATE OR REPLACE FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_count bigint := 0;
    v_n     bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(pgq._lock_id('prune_all')) THEN
        RETURN NULL;
    END IF;
    v_count := pgq.prune(prune_all.history_older_than);
    IF prune_all.failed_older_than IS NOT NULL THEN  -- retention, not an operator's flush: not in pgq.actions
        DELETE FROM pgq.failed_jobs f WHERE f.failed_at < now() - prune_all.failed_older_than;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_count := v_count + v_n;
    END IF;
    DELETE FROM pgq.unique_locks u WHERE u.expires_at < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.overlap_locks o WHERE o.expires_at < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.circuits c WHERE c.window_start + make_interval(secs => c.decay) < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.debounce_tokens d
    WHERE d.updated_at < now() - interval '1 hour'
      AND NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = d.job_uuid);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    -- S111: a mark to run alone goes with its job, whichever way the job ended (cancelled,
    -- failed for good, completed without running alone). A marked job is a row of
    -- pgq.jobs while it lives: it has run, and pgq.give_back_group marks it in the
    -- transaction that sends it back to wait.
    DELETE FROM pgq.sql_alone a WHERE NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = a.job_uuid);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.workers w WHERE w.seen_at < now() - interval '1 day';  -- died long ago (S87)
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    v_count := v_count + pgq._batches_prune(prune_all.history_older_than);  -- S73
    -- Last, and only the windows whose lock is free (S82): a reserve writes a window only
    -- under its advisory lock, and may wait for it; after taking these, this transaction
    -- waits for nothing more. A window has ended, or its limit is gone (S83).
    DELETE FROM pgq.rate_limit_windows w
    WHERE CASE WHEN NOT EXISTS (SELECT FROM pgq.rate_limits l  -- (a CASE: only those windows' locks are tried)
                                WHERE l.name = w.limit_name AND w.window_start + l.per >= now())
               THEN pg_try_advisory_xact_lock((pgq._window_lock_ids(ARRAY[w.limit_name], ARRAY[w.key]))[1]) END;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_count + v_n;
END;
$$;

COMMENT ON FUNCTION pgq.prune_all(interval, interval) IS
    'Retention (S39): prunes finished history, old failed jobs (when failed_older_than is given) and coordination rows that no longer say anything; one caller at a time (others get NULL).';

-- pgq._retry_window: seconds a job can spend between its first attempt and its last:
-- the backoffs of its tries - 1 retries (last entry repeating) plus tries × timeout.
-- NULL when tries is unlimited (0).
CREATE OR REPLACE FUNCTION pgq._retry_window(p_tries int, p_backoff int[], p_timeout int) RETURNS bigint
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_tries = 0 THEN NULL ELSE
        coalesce((SELECT sum(p_backoff[least(n, cardinality(p_backoff))]) FROM generate_series(1, p_tries - 1) n), 0)
        + p_tries::bigint * p_timeout END;
$$;

COMMENT ON FUNCTION pgq._retry_window(int, int[], int) IS 'Seconds between a job''s first attempt and its last: backoffs plus tries x timeout; NULL when tries is unlimited.';

-- pgq._check_classes: pgq.check's findings about the job classes (S16, S86), given the
-- worker's --timeout and --tries for the classes that set none: timeouts against
-- retry_after, unique_for against the retry window, backoffs against tries and
-- retry_for, without_overlapping's expire_after, and SQL handlers without a search_path.
CREATE OR REPLACE FUNCTION pgq._check_classes(worker_timeout int, worker_tries int)
RETURNS SETOF pgq.check_finding
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH classes AS (
        SELECT c.*, coalesce(c.timeout, worker_timeout) AS eff_timeout,
               coalesce(c.tries, worker_tries) AS eff_tries,
               coalesce(c.backoff, '{0}') AS eff_backoff,
               coalesce(q.retry_after, pgq._default_retry_after()) AS retry_after,
               pgq._middleware(c.middleware, 'without_overlapping') AS overlap
        FROM pgq.job_classes c
        LEFT JOIN pgq.queues q ON q.name = c.queue
    )
    SELECT 'job ' || c.name AS object, 'timeout_zero' AS rule,
           'timeout 0 disables the handler timeout for this job' AS detail,
           format('pgq.define_job(%L, timeout => N) with N below retry_after %s', c.name, c.retry_after) AS fix, c.queue
    FROM classes c WHERE c.timeout = 0
    UNION ALL
    SELECT 'job ' || c.name, 'timeout_reaches_retry_after',
           format('timeout %s >= retry_after %s of queue %s: the lease can end while the handler still runs',
                  c.eff_timeout, c.retry_after, c.queue),
           format('lower the timeout below %s, or raise the queue''s retry_after above %s', c.retry_after, c.eff_timeout), c.queue
    FROM classes c WHERE c.eff_timeout >= c.retry_after AND c.eff_timeout > 0
    UNION ALL
    SELECT 'job ' || c.name, 'unique_for_shorter_than_retries',
           CASE WHEN c.eff_tries = 0 THEN format('unique_for %s with unlimited tries: the lock expires while the job can still retry', c.unique_for)
                ELSE format('unique_for %s < backoffs + tries × timeout = %s s: the lock can expire during a backoff and let a second copy in',
                            c.unique_for, pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)) END,
           format('raise unique_for above %s s plus a realistic queue wait',
                  coalesce(pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)::text, 'the retry_for window')),
           c.queue
    FROM classes c
    WHERE c.unique_for IS NOT NULL
      AND (CASE WHEN c.eff_tries = 0 THEN c.retry_for IS NULL OR c.unique_for < c.retry_for
                ELSE extract(epoch FROM c.unique_for) < pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout) END)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_past_retry_for',
           format('backoffs of %s retries add up to %s s, past retry_for %s: the last attempt is picked up after the deadline and fails with MaxAttemptsExceeded instead of its own exception',
                  c.eff_tries - 1, pgq._retry_window(c.eff_tries, c.eff_backoff, 0), c.retry_for),
           'shorten the backoffs or lengthen retry_for', c.queue
    FROM classes c
    WHERE c.retry_for IS NOT NULL AND c.eff_tries > 1
      AND pgq._retry_window(c.eff_tries, c.eff_backoff, 0) > extract(epoch FROM c.retry_for)
    UNION ALL
    SELECT 'job ' || c.name, 'expire_after_outside_timeout_retry_after',
           format('without_overlapping expire_after %s is not between timeout %s and retry_after %s',
                  c.overlap ->> 'expire_after', c.eff_timeout, c.retry_after),
           format('set expire_after above %s (the lock must outlive the handler) and below %s (a killed worker''s lock must be gone before its job comes back)',
                  c.eff_timeout, c.retry_after),
           c.queue
    FROM classes c
    WHERE c.overlap ? 'expire_after'
      AND NOT ((c.overlap ->> 'expire_after')::int > c.eff_timeout AND (c.overlap ->> 'expire_after')::int < c.retry_after)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_longer_than_tries',
           format('backoff has %s entries but tries %s allows only %s retries: the last %s are never used',
                  cardinality(c.backoff), c.eff_tries, c.eff_tries - 1, cardinality(c.backoff) - (c.eff_tries - 1)),
           'trim the backoff or raise tries', c.queue
    FROM classes c
    WHERE c.backoff IS NOT NULL AND c.eff_tries > 0 AND cardinality(c.backoff) > c.eff_tries - 1 AND cardinality(c.backoff) > 1
    UNION ALL
    SELECT 'job ' || c.name, 'uneven_backoff_behind_release_middleware',
           format('backoff %s is not flat, and release-based middleware (%s) moves the backoff index: the first real failure can wait %s s',
                  c.backoff, (SELECT string_agg(k, ', ') FROM jsonb_array_elements(c.middleware) m, jsonb_object_keys(m) k
                              WHERE k IN ('without_overlapping', 'rate_limited')),
                  (SELECT max(b) FROM unnest(c.backoff) b)),
           'use a flat backoff (one value) for jobs behind without_overlapping or rate_limited', c.queue
    FROM classes c
    WHERE cardinality(c.backoff) > 1
      AND (SELECT count(DISTINCT b) FROM unnest(c.backoff) b) > 1
      AND EXISTS (SELECT FROM jsonb_array_elements(c.middleware) m
                  WHERE m ? 'rate_limited' OR (m ? 'without_overlapping' AND NOT coalesce((m -> 'without_overlapping' ->> 'dont_release')::boolean, false)))
    UNION ALL
    SELECT 'job ' || c.name, 'handler_without_search_path',
           format('handler %s pins no search_path, and none was pinned for it when the class was defined: it runs with search_path pg_catalog, pg_temp, so a table or function it names without its schema is not found',
                  c.handler),
           format('ALTER FUNCTION %s SET search_path = %s, or define the class again from a session whose search_path has the schemas it uses',
                  c.handler, (SELECT quote_ident(n.nspname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = c.handler)),
           c.queue
    FROM classes c
    WHERE c.handler IS NOT NULL AND EXISTS (SELECT FROM pg_proc p WHERE p.oid = c.handler)
      AND pgq._proc_search_path(c.handler) IS NULL
      AND NOT EXISTS (SELECT FROM pgq.handler_search_paths h WHERE h.handler = c.handler);
$$;

COMMENT ON FUNCTION pgq._check_classes(int, int) IS
    'pgq.check''s findings about the job classes, given the worker''s --timeout and --tries (S16, S86).';

-- pgq._check_live: pgq.check's findings about what waits now: jobs in a queue that no
-- live worker serves, jobs whose name no class defines and no live worker has a handler
-- for (S87), and chains and batches that stalled (pgq.stalled, S95).
CREATE OR REPLACE FUNCTION pgq._check_live()
RETURNS SETOF pgq.check_finding
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH live AS (
        SELECT * FROM pgq._live_workers()
    ), waiting AS (
        SELECT j.queue, sum(j.n) AS n FROM pgq._live_counted j WHERE j.reserved_at IS NULL GROUP BY j.queue
    ), nameless AS (
        -- jobs with no SQL handler, by name and queue
        SELECT j.job, j.queue, sum(j.n) AS n
        FROM pgq._live_counted j
        WHERE j.reserved_at IS NULL AND j.handler IS NULL
        GROUP BY j.job, j.queue
    )
    SELECT 'queue ' || w.queue AS object, 'queue_unserved' AS rule,
           format('%s in queue %s, and no live worker serves it (none of the workers seen in the last %s s lists it)',
                  CASE WHEN w.n = 1 THEN '1 job waits' ELSE w.n || ' jobs wait' END, w.queue, extract(epoch FROM pgq._worker_ttl())::int),
           format('start a worker for it (pgq-worker work --queue %s), or dispatch to a queue a worker serves', w.queue),
           w.queue
    FROM waiting w
    WHERE NOT EXISTS (SELECT FROM live l WHERE w.queue = ANY (l.queues))
    UNION ALL
    SELECT 'job ' || x.job, 'job_unhandled',
           format('%s in queue %s, but no job class defines %s and no live worker has a handler for it: a worker that takes one fails it with "no handler"',
                  CASE WHEN x.n = 1 THEN '1 job named ' || x.job || ' waits' ELSE x.n || ' jobs named ' || x.job || ' wait' END,
                  x.queue, x.job),
           format('define it (pgq.define_job(%L, handler => ''schema.function'')), run a worker that registers a Go handler for it, or cancel the jobs if the name is a typo', x.job),
           x.queue
    FROM nameless x
    WHERE NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = x.job)
      AND NOT EXISTS (SELECT FROM live l WHERE x.job = ANY (l.handlers))
    UNION ALL
    SELECT st.kind || ' ' || st.id || coalesce(' (' || st.name || ')', ''), st.kind || '_stalled',
           format('job %s (%s) has been ready in queue %s for %s s, longer than its retry_after of %s s, and no job of the %s ran since%s',
                  st.job_uuid, st.job, st.queue, floor(extract(epoch FROM now() - st.waiting_since)), st.retry_after, st.kind,
                  CASE WHEN st.paused THEN ': the queue is paused' ELSE '' END),
           CASE WHEN st.paused THEN format('resume the queue: pgq.resume_queue(%L)', st.queue)
                ELSE format('run a worker on queue %s (pgq-worker work --queue %s), or look for a middleware turning its jobs away', st.queue, st.queue) END,
           st.queue
    FROM pgq.stalled st;
$$;

COMMENT ON FUNCTION pgq._check_live() IS
    'pgq.check''s findings about what waits now: unserved queues, unhandled job names (S87) and stalled chains and batches (S95).';

-- pgq.check: the ordering linter (S16). One row per problem in the configured queues and
-- job classes, with the object, the rule, the numbers, the fix and the queue it is about
-- (NULL: the workers' own settings). worker_timeout and worker_tries are the worker's
-- --timeout and --tries, used where a class sets none. With queues, only the findings
-- about those queues and the workers' settings (a worker checks what it serves). Its
-- stages: the workers' and queues' settings here, the classes (pgq._check_classes),
-- and what waits now (pgq._check_live).
CREATE OR REPLACE FUNCTION pgq.check(worker_timeout int DEFAULT 60, worker_tries int DEFAULT 1, queues text[] DEFAULT NULL)
RETURNS SETOF pgq.check_finding
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT f.* FROM (
    SELECT 'worker' AS object, 'timeout_zero' AS rule,
           '--timeout 0 disables the handler timeout: a stuck handler holds its slot and its lease forever' AS detail,
           'give the worker a timeout below the shortest retry_after (e.g. --timeout 60)' AS fix, NULL::text AS queue
    WHERE worker_timeout = 0
    UNION ALL
    SELECT 'queue ' || q.name, 'timeout_reaches_retry_after',
           format('worker --timeout %s >= retry_after %s: the lease can end while the handler still runs (equal is not safe: the lease starts first)',
                  worker_timeout, q.retry_after),
           format('raise retry_after (pgq.define_queue(%L, retry_after => %s)) or lower --timeout', q.name, worker_timeout * 3 / 2 + 10),
           q.name
    FROM pgq.queues q
    WHERE worker_timeout >= q.retry_after
    UNION ALL
    SELECT * FROM pgq._check_classes(worker_timeout, worker_tries)
    UNION ALL
    SELECT * FROM pgq._check_live()
    ) f
    WHERE queues IS NULL OR f.queue IS NULL OR f.queue = ANY (queues)  -- the parameter: f has no such column
    ORDER BY 1, 2, 5;
$$;

COMMENT ON FUNCTION pgq.check(int, int, text[]) IS
    'The ordering linter (S16): one row per problem in queues and job classes (object, rule, detail, fix, queue), given the worker''s --timeout and --tries; with queues, only those about them. Also SQL handlers without a search_path (S86), queues no live worker serves and job names nothing handles (S87), and stalled chains and batches (S95).';
