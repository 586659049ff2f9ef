-- Operating jobs and queues from outside a worker: cancelling a job, pausing a queue. Each
-- is recorded in pgq.actions (pgq._record_action), as the other operations (run now,
-- retry, forget, flush: 62_operations.sql) are.

-- pgq.cancel: cancels a job. A waiting job ends at once: 'cancelled'. A running job is
-- marked: its worker cancels the handler within a second (a Go handler's context, a SQL
-- handler's statement) and reports it with pgq.cancelled, and should the worker be gone,
-- the next pickup cancels it before it runs: 'cancelling'. NULL when no live job has that
-- uuid. Recorded in pgq.actions. State change: waiting -> cancelled; reserved ->
-- reserved (cancel requested).
CREATE OR REPLACE FUNCTION pgq.cancel(uuid uuid) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job pgq.jobs := pgq._job_for_update(cancel.uuid);
BEGIN
    IF v_job.id IS NULL THEN
        RETURN NULL;
    END IF;
    IF v_job.reserved_at IS NULL THEN
        PERFORM pgq._cancel(v_job, now(), false);
        PERFORM pgq._record_action('cancel', v_job.uuid, v_job.queue, 'waiting job cancelled');
        RETURN 'cancelled';
    END IF;
    UPDATE pgq.jobs j SET cancel_requested_at = now(), cancel_requested_by = session_user
    WHERE j.uuid = v_job.uuid AND j.cancel_requested_at IS NULL;
    PERFORM pgq._record_action('cancel', v_job.uuid, v_job.queue, 'running job: its handler is cancelled');
    RETURN 'cancelling';
END;
$$;

COMMENT ON FUNCTION pgq.cancel(uuid) IS
    'Cancels a job: a waiting one at once (''cancelled''), a running one through its worker (''cancelling''); NULL when there is no such live job. Not retried, not a failure.';

-- pgq.cancel_requests: the jobs a worker runs whose cancellation an operator asked for
-- (pgq.cancel): their lease tokens. Workers poll it every second; it reads only marked
-- rows (a partial index).
CREATE OR REPLACE FUNCTION pgq.cancel_requests(worker text) RETURNS SETOF uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT j.lease_token FROM pgq.jobs j
    WHERE j.reserved_by = cancel_requests.worker AND j.cancel_requested_at IS NOT NULL;
END;
$$;

COMMENT ON FUNCTION pgq.cancel_requests(text) IS 'Worker protocol: the lease tokens of this worker''s jobs that an operator asked to cancel.';

-- pgq.cancelled: the handlers of these jobs were cancelled on an operator's request
-- (pgq.cancel): each job held by its token ends as cancelled. Returns the attempts
-- recorded; a missing uuid lost its lease (rejected and recorded, S15).
-- State change: reserved -> cancelled.
CREATE OR REPLACE FUNCTION pgq.cancelled(uuids uuid[], tokens uuid[], as_of timestamptz DEFAULT NULL)
RETURNS SETOF pgq.attempts
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := coalesce(cancelled.as_of, now());
    v_job pgq.jobs;
    i     int;
BEGIN
    IF cardinality(cancelled.uuids) IS DISTINCT FROM cardinality(cancelled.tokens) THEN
        RAISE EXCEPTION 'pgq: cancelled needs one token per uuid, got % uuids and % tokens',
            cardinality(cancelled.uuids), cardinality(cancelled.tokens) USING ERRCODE = '22023';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(cancelled.uuids), 0) LOOP
        v_job := pgq._held('cancelled', cancelled.uuids[i], cancelled.tokens[i], v_now);
        CONTINUE WHEN v_job.id IS NULL;
        RETURN NEXT pgq._cancel(v_job, v_now, true);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq.cancelled(uuid[], uuid[], timestamptz) IS
    'Worker protocol: jobs whose handlers were cancelled on an operator''s request end as cancelled; returns the attempts recorded.';

-- pgq.pause_queue: workers stop reserving the queue's jobs (running ones finish).
-- Returns whether it was running before. Recorded in pgq.actions. The queue must be
-- known (S89): it has a pgq.queues row, is named by a job class or a schedule, has jobs
-- waiting, running or failed, or is default. Any other name is refused (22023), since
-- pausing it would create a queue nothing uses: most likely a typo. To create a queue
-- paused on purpose, pgq.define_queue(name, paused => true).
CREATE OR REPLACE FUNCTION pgq.pause_queue(queue text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was boolean;
    v_known text;
BEGIN
    PERFORM pgq._check_name('queue', pause_queue.queue);
    SELECT q.paused INTO v_was FROM pgq.queues q WHERE q.name = pause_queue.queue FOR UPDATE;
    IF NOT FOUND AND pause_queue.queue <> 'default'
       AND NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq.schedule_entries e WHERE e.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq._live_counted j WHERE j.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.queue = pause_queue.queue) THEN
        SELECT string_agg(n, ', ' ORDER BY d, n) INTO v_known
        FROM (SELECT n, pgq._edit_distance(n, pause_queue.queue) AS d
              FROM (SELECT q.name FROM pgq.queues q UNION SELECT c.queue FROM pgq.job_classes c
                    UNION SELECT 'default') k(n)
              ORDER BY 2, 1 LIMIT 3) s
        WHERE d <= greatest(2, length(pause_queue.queue) / 3);
        RAISE EXCEPTION 'pgq: no queue %: no pgq.queues row, job class, schedule or job names it', quote_literal(pause_queue.queue)
            USING ERRCODE = '22023',
                  HINT = CASE WHEN v_known IS NOT NULL THEN format('Did you mean %s? ', v_known) ELSE '' END
                         || format('To create it paused: SELECT pgq.define_queue(%L, paused => true)', pause_queue.queue);
    END IF;
    INSERT INTO pgq.queues AS q (name, paused) VALUES (pause_queue.queue, true)
    ON CONFLICT (name) DO UPDATE SET paused = true, updated_at = now();
    PERFORM pgq._record_action('pause', NULL, pause_queue.queue);
    RETURN NOT coalesce(v_was, false);
END;
$$;

COMMENT ON FUNCTION pgq.pause_queue(text) IS 'Stops workers from reserving the queue''s jobs; returns whether it was running. A name no queue, class, schedule or job uses is refused (S89). Recorded in pgq.actions.';

-- pgq.resume_queue: workers reserve the queue's jobs again, and napping ones are woken.
-- Returns whether it was paused. Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.resume_queue(queue text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was boolean;
BEGIN
    PERFORM pgq._check_name('queue', resume_queue.queue);
    SELECT q.paused INTO v_was FROM pgq.queues q WHERE q.name = resume_queue.queue FOR UPDATE;
    UPDATE pgq.queues q SET paused = false, updated_at = now() WHERE q.name = resume_queue.queue;
    PERFORM pgq._record_action('resume', NULL, resume_queue.queue);
    PERFORM pg_notify('pgq_jobs', resume_queue.queue);
    RETURN coalesce(v_was, false);
END;
$$;

COMMENT ON FUNCTION pgq.resume_queue(text) IS 'Lets workers reserve the queue''s jobs again and wakes them; returns whether it was paused. Recorded in pgq.actions.';
