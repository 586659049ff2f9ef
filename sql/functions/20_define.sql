-- Configuration: queues, job classes and rate limits.

-- pgq.define_queue: creates or updates a queue. retry_after is the lease in seconds.
CREATE OR REPLACE FUNCTION pgq.define_queue(name text, retry_after int DEFAULT pgq._default_retry_after(), paused boolean DEFAULT false)
RETURNS pgq.queues
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_queue pgq.queues;
BEGIN
    PERFORM pgq._check_name('queue', define_queue.name);
    IF define_queue.retry_after IS NULL OR define_queue.retry_after < 1 THEN
        RAISE EXCEPTION 'pgq: retry_after must be seconds >= 1, got %', define_queue.retry_after
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.queues AS q (name, retry_after, paused)
    VALUES (define_queue.name, define_queue.retry_after, coalesce(define_queue.paused, false))
    ON CONFLICT ON CONSTRAINT queues_pkey DO UPDATE
        SET retry_after = EXCLUDED.retry_after, paused = EXCLUDED.paused, updated_at = now()
    RETURNING * INTO v_queue;
    RETURN v_queue;
END;
$$;

COMMENT ON FUNCTION pgq.define_queue(text, int, boolean) IS
    'Creates or updates a queue: retry_after is its lease in seconds (default 90), paused stops reservations.';

-- pgq.define_job: upserts a job class. The whole declaration is replaced (a parameter
-- left out becomes NULL/default). Jobs already dispatched keep their frozen settings (S1).
-- handler names a SQL function taking one jsonb argument; it must exist when defined.
CREATE OR REPLACE FUNCTION pgq.define_job(
    name            text,
    queue           text DEFAULT 'default',
    handler         text DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT false,
    retry_for       interval DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    unique_by       text[] DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_by     text[] DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL
) RETURNS pgq.job_classes
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_class pgq.job_classes;
BEGIN
    PERFORM pgq._check_name('job', define_job.name);
    PERFORM pgq._check_name('queue', define_job.queue);
    PERFORM pgq._check_settings(define_job.tries, define_job.backoff, define_job.max_exceptions, define_job.timeout);
    IF define_job.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', define_job.retry_for USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_unique_debounce(
        define_job.unique_for IS NOT NULL OR define_job.unique_until IS NOT NULL OR define_job.unique_by IS NOT NULL,
        define_job.debounce_for IS NOT NULL OR define_job.debounce_by IS NOT NULL OR define_job.debounce_max_wait IS NOT NULL,
        define_job.unique_for, define_job.unique_until, define_job.debounce_for, define_job.debounce_max_wait);
    PERFORM pgq._check_middleware(define_job.middleware);
    IF define_job.handler IS NOT NULL AND pgq._handler_proc(define_job.handler) IS NULL THEN
        RAISE EXCEPTION 'pgq: handler function %(jsonb) does not exist', define_job.handler
            USING ERRCODE = '42883',
                  HINT = 'Create the function first: CREATE OR REPLACE FUNCTION ' || define_job.handler || '(payload jsonb) RETURNS void ...';
    END IF;
    INSERT INTO pgq.job_classes AS c
        (name, queue, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for,
         unique_for, unique_until, unique_by, debounce_for, debounce_by, debounce_max_wait, middleware)
    VALUES (define_job.name, define_job.queue, define_job.handler, define_job.tries, define_job.backoff,
            define_job.max_exceptions, define_job.timeout, coalesce(define_job.fail_on_timeout, false),
            define_job.retry_for, define_job.unique_for,
            CASE WHEN define_job.unique_for IS NOT NULL OR define_job.unique_by IS NOT NULL
                 THEN coalesce(define_job.unique_until, 'processed') END,
            define_job.unique_by, define_job.debounce_for, define_job.debounce_by, define_job.debounce_max_wait,
            define_job.middleware)
    ON CONFLICT ON CONSTRAINT job_classes_pkey DO UPDATE
        SET queue = EXCLUDED.queue, handler = EXCLUDED.handler, tries = EXCLUDED.tries,
            backoff = EXCLUDED.backoff, max_exceptions = EXCLUDED.max_exceptions,
            timeout = EXCLUDED.timeout, fail_on_timeout = EXCLUDED.fail_on_timeout,
            retry_for = EXCLUDED.retry_for, unique_for = EXCLUDED.unique_for,
            unique_until = EXCLUDED.unique_until, unique_by = EXCLUDED.unique_by,
            debounce_for = EXCLUDED.debounce_for, debounce_by = EXCLUDED.debounce_by,
            debounce_max_wait = EXCLUDED.debounce_max_wait, middleware = EXCLUDED.middleware, updated_at = now()
    RETURNING * INTO v_class;
    RETURN v_class;
END;
$$;

COMMENT ON FUNCTION pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb) IS
    'Upserts a job class: queue, SQL handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for, unique_*, debounce_* and middleware. New dispatches copy it (S1).';

-- pgq.define_limit: creates or updates a named rate limit of max hits per window,
-- shared by every worker (S28).
CREATE OR REPLACE FUNCTION pgq.define_limit(name text, max int, per interval) RETURNS pgq.rate_limits
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_limit pgq.rate_limits;
BEGIN
    PERFORM pgq._check_name('limit', define_limit.name);
    IF define_limit.max IS NULL OR define_limit.max < 1 THEN
        RAISE EXCEPTION 'pgq: limit max must be >= 1, got %', define_limit.max USING ERRCODE = '22023';
    END IF;
    IF define_limit.per IS NULL OR define_limit.per <= interval '0' THEN
        RAISE EXCEPTION 'pgq: limit per must be a positive interval, got %', define_limit.per USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.rate_limits AS l (name, max, per) VALUES (define_limit.name, define_limit.max, define_limit.per)
    ON CONFLICT ON CONSTRAINT rate_limits_pkey DO UPDATE SET max = EXCLUDED.max, per = EXCLUDED.per, updated_at = now()
    RETURNING * INTO v_limit;
    RETURN v_limit;
END;
$$;

COMMENT ON FUNCTION pgq.define_limit(text, int, interval) IS
    'Creates or updates a named rate limit: max hits per interval, one budget for every worker (S28).';
