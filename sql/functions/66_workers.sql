-- Which workers run and what they serve (S87): each worker writes its row of pgq.workers
-- (its queues, the job names it has Go handlers for) when it starts and every few
-- seconds, and deletes it when it stops. A row not written for pgq._worker_ttl() is a
-- worker that died. pgq.check and pgq.dispatch_warnings read the live ones to tell a
-- queue no worker serves, or a job name nothing handles.

-- pgq.worker_seen: worker protocol. Writes the worker's row: the queues it serves, the
-- job names it has a Go handler for, its version, and now as its last sign of life;
-- starting (at its start) also resets started_at.
CREATE OR REPLACE FUNCTION pgq.worker_seen(worker text, queues text[], handlers text[], version text DEFAULT NULL,
                                           starting boolean DEFAULT false)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO pgq.workers AS w (name, queues, handlers, version)
    VALUES (worker_seen.worker, coalesce(worker_seen.queues, '{}'), coalesce(worker_seen.handlers, '{}'), worker_seen.version)
    ON CONFLICT (name) DO UPDATE
        SET queues = EXCLUDED.queues, handlers = EXCLUDED.handlers, version = EXCLUDED.version, seen_at = now(),
            started_at = CASE WHEN worker_seen.starting THEN now() ELSE w.started_at END;
$$;

COMMENT ON FUNCTION pgq.worker_seen(text, text[], text[], text, boolean) IS
    'Worker protocol: records that a worker runs, the queues it serves and its Go handlers'' job names (S87).';

-- pgq.worker_stopped: worker protocol. A worker that stops deletes its row.
CREATE OR REPLACE FUNCTION pgq.worker_stopped(worker text) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM pgq.workers w WHERE w.name = worker_stopped.worker;
$$;

COMMENT ON FUNCTION pgq.worker_stopped(text) IS 'Worker protocol: a stopping worker deletes its row of pgq.workers (S87).';

-- pgq.dispatch_warnings: what would keep a job of this name dispatched to this queue
-- (NULL: its class's, else default) from running (S87), one sentence each: no job class
-- defines the name and no live worker has a handler for it (it would fail with "no
-- handler"), with the nearest known names; or no live worker serves the queue (it would
-- wait). No row: nothing in the way. pgq-worker dispatch prints them as warnings: a
-- job name without a class is allowed (Go handlers), so these are not errors.
CREATE OR REPLACE FUNCTION pgq.dispatch_warnings(job text, queue text DEFAULT NULL) RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queue text := coalesce(dispatch_warnings.queue,
                             (SELECT c.queue FROM pgq.job_classes c WHERE c.name = dispatch_warnings.job), 'default');
    v_live  int := (SELECT count(*) FROM pgq._live_workers());
    v_near  text;
BEGIN
    IF NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = dispatch_warnings.job)
       AND NOT EXISTS (SELECT FROM pgq._live_workers() w WHERE dispatch_warnings.job = ANY (w.handlers)) THEN
        SELECT string_agg(n, ' or ' ORDER BY d, n) INTO v_near
        FROM (SELECT n, pgq._edit_distance(n, dispatch_warnings.job) AS d
              FROM (SELECT c.name FROM pgq.job_classes c
                    UNION SELECT h FROM pgq._live_workers() w, unnest(w.handlers) h) k(n)) s
        WHERE d <= greatest(2, length(dispatch_warnings.job) / 3);
        RETURN NEXT format('no job class defines %s, and no live worker has a handler for it: the job fails with "no handler" unless one comes%s',
                           dispatch_warnings.job,
                           CASE WHEN v_near IS NOT NULL THEN format(' (did you mean %s?)', v_near) ELSE '' END);
    END IF;
    IF NOT EXISTS (SELECT FROM pgq._live_workers() w WHERE v_queue = ANY (w.queues)) THEN
        RETURN NEXT format('no live worker serves queue %s%s: the job waits until one does (pgq-worker work --queue %s)',
                           v_queue,
                           CASE WHEN v_live = 0 THEN format(' (no worker was seen in the last %s s)', extract(epoch FROM pgq._worker_ttl())::int)
                                ELSE format(' (%s live workers serve %s)', v_live,
                                            (SELECT string_agg(DISTINCT q, ', ') FROM pgq._live_workers() w, unnest(w.queues) q)) END,
                           v_queue);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq.dispatch_warnings(text, text) IS
    'What would keep a job of this name in this queue from running: no class and no live worker''s handler for the name, no live worker for the queue (S87). One sentence each; none when nothing is in the way.';
