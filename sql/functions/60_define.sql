-- Configuration: queues, job classes and rate limits.

-- pgq.define_queue: creates or updates a queue. retry_after is the lease in seconds.
-- fair_by names a payload field: the queue takes its jobs round-robin across the field's
-- values (S114-S117); NULL: a plain FIFO queue. Each call sets every setting, fair_by
-- included. When fair_by changes, the queue's live jobs get their keys anew (their
-- field under the new name, or none), in this transaction.
-- Returns a line that says what was defined (psql prints it as it is).
CREATE OR REPLACE FUNCTION pgq.define_queue(
    name        text,
    retry_after int DEFAULT pgq._default_retry_after(),
    paused      boolean DEFAULT false,
    fair_by     text DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_queue pgq.queues;
    v_was   text;
BEGIN
    PERFORM pgq._check_name('queue', define_queue.name);
    IF define_queue.retry_after IS NULL OR define_queue.retry_after < 1 THEN
        RAISE EXCEPTION 'pgq: retry_after must be seconds >= 1, got %', define_queue.retry_after
            USING ERRCODE = '22023';
    END IF;
    IF define_queue.fair_by IS NOT NULL AND (define_queue.fair_by = '' OR octet_length(define_queue.fair_by) > 200) THEN
        RAISE EXCEPTION 'pgq: fair_by must name a payload field (1 to 200 bytes), got %', quote_literal(define_queue.fair_by)
            USING ERRCODE = '22023';
    END IF;
    -- A new fair_by waits for the transactions storing jobs in the queue under the old
    -- one (pgq._fair_by), so that the rekey below sees their jobs.
    IF define_queue.fair_by IS DISTINCT FROM (SELECT q.fair_by FROM pgq.queues q WHERE q.name = define_queue.name) THEN
        PERFORM pg_advisory_xact_lock(pgq._lock_space('fair_by'), hashtext(define_queue.name));
    END IF;
    SELECT q.fair_by INTO v_was FROM pgq.queues q WHERE q.name = define_queue.name FOR UPDATE;
    INSERT INTO pgq.queues AS q (name, retry_after, paused, fair_by)
    VALUES (define_queue.name, define_queue.retry_after, coalesce(define_queue.paused, false), define_queue.fair_by)
    ON CONFLICT ON CONSTRAINT queues_pkey DO UPDATE
        SET retry_after = EXCLUDED.retry_after, paused = EXCLUDED.paused, fair_by = EXCLUDED.fair_by, updated_at = now()
    RETURNING * INTO v_queue;
    IF v_queue.fair_by IS DISTINCT FROM v_was THEN
        PERFORM pgq._fair_rekey(v_queue.name, v_queue.fair_by);
    END IF;
    RETURN format('queue %s: retry_after %s s%s%s', v_queue.name, v_queue.retry_after,
                  CASE WHEN v_queue.fair_by IS NOT NULL THEN format(', fair by %s', v_queue.fair_by) ELSE '' END,
                  CASE WHEN v_queue.paused THEN ', paused (pgq.resume_queue starts it)' ELSE '' END);
END;
$$;

COMMENT ON FUNCTION pgq.define_queue(text, int, boolean, text) IS
    'Creates or updates a queue: retry_after is its lease in seconds (default 90), paused stops reservations, fair_by names the payload field whose values share the queue round-robin (S114). Returns what it defined, as a line of text.';

-- pgq.set_fair_weight: the weight of one key of a fair queue (S117): each round, a key
-- of weight w gets up to w jobs where a key of weight 1 gets one. 1 to 1000; a key with
-- no weight set weighs 1. Returns what it set, as a line of text.
CREATE OR REPLACE FUNCTION pgq.set_fair_weight(queue text, key text, weight int) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgq._check_name('queue', set_fair_weight.queue);
    IF set_fair_weight.key IS NULL THEN
        RAISE EXCEPTION 'pgq: set_fair_weight needs a key' USING ERRCODE = '22023';
    END IF;
    IF set_fair_weight.weight IS NULL OR set_fair_weight.weight NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'pgq: a fair weight must be from 1 to 1000, got %', set_fair_weight.weight USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.fair_weights AS w (queue, key, weight)
    VALUES (set_fair_weight.queue, set_fair_weight.key, set_fair_weight.weight)
    ON CONFLICT ON CONSTRAINT fair_weights_pkey DO UPDATE SET weight = EXCLUDED.weight;
    RETURN format('queue %s: key %s weighs %s%s', set_fair_weight.queue, quote_literal(set_fair_weight.key),
                  set_fair_weight.weight,
                  CASE WHEN NOT EXISTS (SELECT FROM pgq.queues q WHERE q.name = set_fair_weight.queue AND q.fair_by IS NOT NULL)
                       THEN ' (the queue is not fair yet: pgq.define_queue(..., fair_by => ...))' ELSE '' END);
END;
$$;

COMMENT ON FUNCTION pgq.set_fair_weight(text, text, int) IS
    'Sets the weight (1 to 1000, default 1) of a key of a fair queue: it gets that many jobs a round (S117). Returns what it set, as a line of text.';

-- pgq._check_ceilings: the guard of a class's ceilings (S90): max_tries >= 0 (0:
-- unlimited allowed), max_retry_for positive, min_backoff >= 0, max_timeout 1 to the
-- longest PostgreSQL can set; and the class's own settings within them, since a class
-- whose tries its own max_tries forbids says two things at once. Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_ceilings(
    p_tries int, p_backoff int[], p_timeout int, p_retry_for interval,
    p_max_tries int, p_max_retry_for interval, p_min_backoff int, p_max_timeout int
) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_max_tries < 0 THEN
        RAISE EXCEPTION 'pgq: max_tries must be >= 0 (0 allows unlimited tries), got %', p_max_tries USING ERRCODE = '22023';
    END IF;
    IF p_max_retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: max_retry_for must be positive, got %', p_max_retry_for USING ERRCODE = '22023';
    END IF;
    IF p_min_backoff < 0 THEN
        RAISE EXCEPTION 'pgq: min_backoff must be seconds >= 0, got %', p_min_backoff USING ERRCODE = '22023';
    END IF;
    IF p_max_timeout NOT BETWEEN 1 AND pgq._max_timeout() THEN
        RAISE EXCEPTION 'pgq: max_timeout must be seconds from 1 to %, got %', pgq._max_timeout(), p_max_timeout
            USING ERRCODE = '22023';
    END IF;
    IF p_max_tries > 0 AND p_tries NOT BETWEEN 1 AND p_max_tries THEN
        RAISE EXCEPTION 'pgq: tries % is beyond the class''s own max_tries %', p_tries, p_max_tries USING ERRCODE = '22023';
    END IF;
    IF p_retry_for > p_max_retry_for THEN
        RAISE EXCEPTION 'pgq: retry_for % is beyond the class''s own max_retry_for %', p_retry_for, p_max_retry_for
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM unnest(p_backoff) b WHERE b < p_min_backoff) THEN
        RAISE EXCEPTION 'pgq: backoff % is below the class''s own min_backoff %', p_backoff, p_min_backoff
            USING ERRCODE = '22023';
    END IF;
    IF p_timeout = 0 AND p_max_timeout IS NOT NULL OR p_timeout > p_max_timeout THEN
        RAISE EXCEPTION 'pgq: timeout % is beyond the class''s own max_timeout %',
            CASE WHEN p_timeout = 0 THEN '0 (none)' ELSE p_timeout::text END, p_max_timeout
            USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_ceilings(int, int[], int, interval, int, interval, int, int) IS
    'Raises 22023 for a bad ceiling of a job class, or class settings beyond their own ceilings (S90).';

-- pgq._define_job: pgq.define_job with pgq's privileges, the handler already resolved.
CREATE OR REPLACE FUNCTION pgq._define_job(
    name            text,
    queue           text,
    handler         regprocedure,
    tries           int,
    backoff         int[],
    max_exceptions  int,
    timeout         int,
    fail_on_timeout boolean,
    retry_for       interval,
    unique_for      interval,
    unique_until    text,
    unique_by       text[],
    debounce_for    interval,
    debounce_by     text[],
    debounce_max_wait interval,
    middleware      jsonb,
    max_tries       int,
    max_retry_for   interval,
    min_backoff     int,
    max_timeout     int,
    search_path     text,
    isolated        boolean
) RETURNS pgq.job_classes
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_class pgq.job_classes;
BEGIN
    PERFORM pgq._check_name('job', _define_job.name);
    PERFORM pgq._check_name('queue', _define_job.queue);
    PERFORM pgq._check_settings(_define_job.tries, _define_job.backoff, _define_job.max_exceptions, _define_job.timeout);
    IF _define_job.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', _define_job.retry_for USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_unique_debounce(
        _define_job.unique_for IS NOT NULL OR _define_job.unique_until IS NOT NULL OR _define_job.unique_by IS NOT NULL,
        _define_job.debounce_for IS NOT NULL OR _define_job.debounce_by IS NOT NULL OR _define_job.debounce_max_wait IS NOT NULL,
        _define_job.unique_for, _define_job.unique_until, _define_job.debounce_for, _define_job.debounce_max_wait);
    PERFORM pgq._check_middleware(_define_job.middleware);
    PERFORM pgq._check_ceilings(_define_job.tries, _define_job.backoff, _define_job.timeout, _define_job.retry_for,
                                _define_job.max_tries, _define_job.max_retry_for, _define_job.min_backoff,
                                _define_job.max_timeout);
    INSERT INTO pgq.job_classes AS c
        (name, queue, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for,
         unique_for, unique_until, unique_by, debounce_for, debounce_by, debounce_max_wait, middleware,
         max_tries, max_retry_for, min_backoff, max_timeout, isolated)
    VALUES (_define_job.name, _define_job.queue, _define_job.handler, _define_job.tries, _define_job.backoff,
            _define_job.max_exceptions, _define_job.timeout, coalesce(_define_job.fail_on_timeout, false),
            _define_job.retry_for, _define_job.unique_for,
            CASE WHEN _define_job.unique_for IS NOT NULL OR _define_job.unique_by IS NOT NULL
                 THEN coalesce(_define_job.unique_until, 'processed') END,
            _define_job.unique_by, _define_job.debounce_for, _define_job.debounce_by, _define_job.debounce_max_wait,
            _define_job.middleware, _define_job.max_tries, _define_job.max_retry_for, _define_job.min_backoff,
            _define_job.max_timeout, coalesce(_define_job.isolated, false))
    ON CONFLICT ON CONSTRAINT job_classes_pkey DO UPDATE
        SET queue = EXCLUDED.queue, handler = EXCLUDED.handler, tries = EXCLUDED.tries,
            backoff = EXCLUDED.backoff, max_exceptions = EXCLUDED.max_exceptions,
            timeout = EXCLUDED.timeout, fail_on_timeout = EXCLUDED.fail_on_timeout,
            retry_for = EXCLUDED.retry_for, unique_for = EXCLUDED.unique_for,
            unique_until = EXCLUDED.unique_until, unique_by = EXCLUDED.unique_by,
            debounce_for = EXCLUDED.debounce_for, debounce_by = EXCLUDED.debounce_by,
            debounce_max_wait = EXCLUDED.debounce_max_wait, middleware = EXCLUDED.middleware,
            max_tries = EXCLUDED.max_tries, max_retry_for = EXCLUDED.max_retry_for,
            min_backoff = EXCLUDED.min_backoff, max_timeout = EXCLUDED.max_timeout,
            isolated = EXCLUDED.isolated, updated_at = now()
    RETURNING * INTO v_class;
    -- The handler's search_path (S86): the one given, for a handler that pins none; the
    -- last definition that names a handler decides it, for every class that names it.
    IF _define_job.handler IS NOT NULL AND _define_job.search_path IS NOT NULL THEN
        INSERT INTO pgq.handler_search_paths AS h (handler, search_path)
        VALUES (_define_job.handler, _define_job.search_path)
        ON CONFLICT ON CONSTRAINT handler_search_paths_pkey DO UPDATE
            SET search_path = EXCLUDED.search_path, defined_by = EXCLUDED.defined_by, defined_at = EXCLUDED.defined_at;
    ELSIF _define_job.handler IS NOT NULL THEN
        DELETE FROM pgq.handler_search_paths h WHERE h.handler = _define_job.handler;
    END IF;
    RETURN v_class;
END;
$$;

COMMENT ON FUNCTION pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text, boolean) IS
    'The privileged part of pgq.define_job: upserts the class, its handler resolved by the caller, and the search_path that handler runs with when it pins none (S86).';

-- pgq._describe_class: a job class as one line of text, what pgq.define_job returns.
CREATE OR REPLACE FUNCTION pgq._describe_class(p_class pgq.job_classes, p_search_path text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT concat_ws(', ',
        format('job class %s: queue %s', p_class.name, p_class.queue),
        CASE WHEN p_class.handler IS NULL THEN 'no SQL handler (a Go worker''s handler runs it)'
             ELSE format('handler %s', p_class.handler) END,
        CASE WHEN p_search_path IS NOT NULL THEN format('run with search_path %s', p_search_path) END,
        CASE WHEN p_class.tries IS NOT NULL THEN format('tries %s', p_class.tries) END,
        CASE WHEN p_class.backoff IS NOT NULL THEN format('backoff %s', p_class.backoff) END,
        CASE WHEN p_class.max_exceptions IS NOT NULL THEN format('max_exceptions %s', p_class.max_exceptions) END,
        CASE WHEN p_class.timeout IS NOT NULL THEN format('timeout %s s', p_class.timeout) END,
        CASE WHEN p_class.fail_on_timeout THEN 'fail_on_timeout' END,
        CASE WHEN p_class.isolated THEN 'isolated (each job runs in a transaction of its own)' END,
        CASE WHEN p_class.retry_for IS NOT NULL THEN format('retry_for %s', p_class.retry_for) END,
        CASE WHEN p_class.unique_for IS NOT NULL OR p_class.unique_by IS NOT NULL
             THEN format('unique until %s%s%s', p_class.unique_until,
                         CASE WHEN p_class.unique_for IS NOT NULL THEN format(' for %s', p_class.unique_for) END,
                         CASE WHEN p_class.unique_by IS NOT NULL THEN format(' by %s', p_class.unique_by) END) END,
        CASE WHEN p_class.debounce_for IS NOT NULL OR p_class.debounce_by IS NOT NULL
             THEN format('debounced%s%s%s',
                         CASE WHEN p_class.debounce_for IS NOT NULL THEN format(' for %s', p_class.debounce_for) END,
                         CASE WHEN p_class.debounce_by IS NOT NULL THEN format(' by %s', p_class.debounce_by) END,
                         CASE WHEN p_class.debounce_max_wait IS NOT NULL THEN format(' at most %s', p_class.debounce_max_wait) END) END,
        CASE WHEN num_nonnulls(p_class.max_tries, p_class.max_retry_for, p_class.min_backoff, p_class.max_timeout) > 0
             THEN 'a dispatch may set ' || concat_ws(', ',
                 CASE WHEN p_class.max_tries IS NOT NULL THEN format('tries up to %s', p_class.max_tries) END,
                 CASE WHEN p_class.max_retry_for IS NOT NULL THEN format('retry_for up to %s', p_class.max_retry_for) END,
                 CASE WHEN p_class.min_backoff IS NOT NULL THEN format('backoff from %s s', p_class.min_backoff) END,
                 CASE WHEN p_class.max_timeout IS NOT NULL THEN format('timeout up to %s s', p_class.max_timeout) END) END,
        CASE WHEN p_class.middleware IS NOT NULL
             THEN 'middleware ' || (SELECT string_agg(k, ', ' ORDER BY n)
                                    FROM jsonb_array_elements(p_class.middleware) WITH ORDINALITY AS m(e, n),
                                         jsonb_object_keys(m.e) k) END);
$$;

COMMENT ON FUNCTION pgq._describe_class(pgq.job_classes, text) IS 'A job class as one line of text: what pgq.define_job returns.';

-- pgq.define_job: upserts a job class. The whole declaration is replaced (a parameter
-- left out becomes NULL/default). Jobs already dispatched keep their frozen settings (S1).
-- handler names a SQL function taking one jsonb argument, with its schema; it must exist,
-- the caller must be allowed to execute it, and it is stored as that function
-- (regprocedure), not as a name to look up later. Only pgq_admin may call this, so only
-- an admin names the code that workers run (S44). Not SECURITY DEFINER itself: the
-- handler is resolved with the caller's privileges, then pgq._define_job writes the row.
-- max_tries, max_retry_for, min_backoff and max_timeout are the ceilings of what a
-- dispatch may set beyond the class's own settings (S90); NULL takes the database's
-- (S91). isolated: the worker runs each SQL job of the class in a transaction of its
-- own, never in a group with other jobs (S112); read when a job runs, not frozen.
-- A handler function that pins no search_path of its own runs with the schemas of
-- search_path (S86): by default the caller's search_path as it resolves at the call
-- (its default is evaluated before this function's own SET search_path applies), '{}'
-- for none. pg_temp, pgq, pg_catalog and any schema in which every role may create
-- objects (where another role could put a table or function of the same name in the
-- handler's way) are left out. pgq.run_sql_job runs the handler with search_path
-- pg_catalog, those schemas, pg_temp. A NOTICE says what was pinned and how to pin it on
-- the function instead. Returns the class as a line of text.
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
    middleware      jsonb DEFAULT NULL,
    max_tries       int DEFAULT NULL,
    max_retry_for   interval DEFAULT NULL,
    min_backoff     int DEFAULT NULL,
    max_timeout     int DEFAULT NULL,
    search_path     text[] DEFAULT current_schemas(false),
    isolated        boolean DEFAULT false
) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_proc    regprocedure;
    v_own     text;     -- the search_path the handler function pins itself
    v_path    text;     -- the one pinned for it here
    v_skipped text;     -- schemas of the caller's path left out: anyone may create in them
    v_class   pgq.job_classes;
BEGIN
    IF define_job.handler IS NOT NULL THEN
        IF define_job.handler !~ '^[^.]+\.[^.]+$' THEN
            RAISE EXCEPTION 'pgq: handler % must name its schema, e.g. public.%', quote_literal(define_job.handler), define_job.handler
                USING ERRCODE = '22023';
        END IF;
        v_proc := pgq._handler_proc(define_job.handler);
        IF v_proc IS NULL THEN
            RAISE EXCEPTION 'pgq: handler function %(jsonb) does not exist', define_job.handler
                USING ERRCODE = '42883',
                      HINT = 'Create the function first: CREATE FUNCTION ' || define_job.handler || '(payload jsonb) RETURNS void ...';
        END IF;
        IF NOT has_function_privilege(v_proc, 'EXECUTE') THEN
            RAISE EXCEPTION 'pgq: % may not execute handler %', current_user, v_proc USING ERRCODE = '42501';
        END IF;
        v_own := pgq._proc_search_path(v_proc);
        IF v_own IS NULL THEN
            -- By default current_schemas(false): the caller's path as it resolves now
            -- ("$user" and schemas that do not exist are gone; the implicit ones are not
            -- listed).
            SELECT string_agg(quote_ident(s), ', ' ORDER BY n) FILTER (WHERE NOT has_schema_privilege('public', s, 'CREATE')),
                   string_agg(quote_ident(s), ', ' ORDER BY n) FILTER (WHERE has_schema_privilege('public', s, 'CREATE'))
            INTO v_path, v_skipped
            FROM unnest(define_job.search_path) WITH ORDINALITY AS c(s, n)
            WHERE s NOT LIKE 'pg\_temp%' AND s NOT IN ('pgq', 'pg_catalog') AND to_regnamespace(quote_ident(s)) IS NOT NULL;
            RAISE NOTICE '%', format('pgq: handler %s pins no search_path: ', v_proc)
                || CASE WHEN v_path IS NOT NULL
                        THEN format('it runs with search_path pg_catalog, %s, pg_temp', v_path)
                        ELSE 'it runs with search_path pg_catalog, pg_temp: name its tables with their schema' END
                || CASE WHEN v_skipped IS NOT NULL
                        THEN format('; %s left out, since every role may create objects there', v_skipped) ELSE '' END
                USING HINT = format('To pin one on the function itself: ALTER FUNCTION %s SET search_path = %s',
                                    v_proc, coalesce(v_path, quote_ident((SELECT nspname FROM pg_namespace ns JOIN pg_proc p ON p.pronamespace = ns.oid WHERE p.oid = v_proc))));
        END IF;
    END IF;
    v_class := pgq._define_job(define_job.name, define_job.queue, v_proc, define_job.tries, define_job.backoff,
                               define_job.max_exceptions, define_job.timeout, define_job.fail_on_timeout, define_job.retry_for,
                               define_job.unique_for, define_job.unique_until, define_job.unique_by, define_job.debounce_for,
                               define_job.debounce_by, define_job.debounce_max_wait, define_job.middleware,
                               define_job.max_tries, define_job.max_retry_for, define_job.min_backoff, define_job.max_timeout,
                               v_path, define_job.isolated);
    RETURN pgq._describe_class(v_class, coalesce(v_own, CASE WHEN v_path IS NOT NULL THEN 'pg_catalog, ' || v_path || ', pg_temp' END));
END;
$$;

COMMENT ON FUNCTION pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text[], boolean) IS
    'Upserts a job class: queue, SQL handler (resolved with the caller''s privileges; run with search_path, by default the caller''s, when it pins none, S86; isolated: each job in a transaction of its own, S112), tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for, unique_*, debounce_*, middleware, and the ceilings of a dispatch''s own options (max_tries, max_retry_for, min_backoff, max_timeout, S90). New dispatches copy it (S1, S44). Returns the class as a line of text.';

-- pgq.define_limit: creates or updates a named rate limit of max hits per window,
-- shared by every worker (S28). Returns it as a line of text.
CREATE OR REPLACE FUNCTION pgq.define_limit(name text, max int, per interval) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
    RETURN format('limit %s: %s per %s, shared by every worker', v_limit.name, v_limit.max, v_limit.per);
END;
$$;

COMMENT ON FUNCTION pgq.define_limit(text, int, interval) IS
    'Creates or updates a named rate limit: max hits per interval, one budget for every worker (S28). Returns it as a line of text.';

-- pgq._refuse_named_limit: raises 2BP01 while a job class, a schedule or a running
-- chain names the limit in a middleware of that kind (rate_limited or
-- concurrency_limited): their next dispatch would fail.
CREATE OR REPLACE FUNCTION pgq._refuse_named_limit(p_kind text, p_name text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_path  jsonpath := format('$[*].%s.limit ? (@ == $name)', p_kind)::jsonpath;
    v_chain jsonpath := format('$[*].middleware[*].%s.limit ? (@ == $name)', p_kind)::jsonpath;
    v_vars  jsonb := jsonb_build_object('name', p_name);
    v_users text;
BEGIN
    SELECT string_agg(u, ', ' ORDER BY u) INTO v_users
    FROM (SELECT format('job class %s', c.name) AS u FROM pgq.job_classes c
          WHERE jsonb_path_exists(c.middleware, v_path, v_vars)
          UNION ALL
          SELECT format('schedule %s', e.name) FROM pgq.schedule_entries e
          WHERE jsonb_path_exists(e.middleware, v_path, v_vars)
          UNION ALL
          SELECT format('chain %s', ch.id) FROM pgq.job_chains ch
          WHERE ch.state = 'running' AND jsonb_path_exists(ch.steps, v_chain, v_vars)) x(u);
    IF v_users IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: limit % is named by %', quote_literal(p_name), v_users
            USING ERRCODE = '2BP01', HINT = 'Define them without it first (a running chain: let it end, or cancel it).';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._refuse_named_limit(text, text) IS 'Raises 2BP01 while a job class, schedule or running chain names this limit (S83, S99).';

-- pgq.drop_limit: deletes a named rate limit (S83). Refused (2BP01) while a job class, a
-- schedule or a running chain names it in its middleware: their next dispatch would
-- fail. Jobs already dispatched with it are admitted from then on (there is no budget
-- left to keep). Its windows are deleted when their lock is free now, the others (a
-- reserve holds them) by retention: a drop waits for no reserve, and holds nothing a
-- reserve waits for. False when there was none.
CREATE OR REPLACE FUNCTION pgq.drop_limit(name text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgq._refuse_named_limit('rate_limited', drop_limit.name);
    DELETE FROM pgq.rate_limits l WHERE l.name = drop_limit.name;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM pgq.rate_limit_windows w
    WHERE w.limit_name = drop_limit.name
      AND pg_try_advisory_xact_lock((pgq._window_lock_ids(ARRAY[w.limit_name], ARRAY[w.key]))[1]);
    RETURN true;
END;
$$;

COMMENT ON FUNCTION pgq.drop_limit(text) IS
    'Deletes a named rate limit, unless a job class, schedule or running chain names it (2BP01); jobs already dispatched with it are admitted. False when there was none (S83).';

-- pgq.define_concurrency: creates or updates a named concurrency limit (S99): at most
-- "limit" handlers (1 to 1,000) of each of its keys run at once across every worker, for
-- every job class whose concurrency_limited middleware names it. A lowered limit holds
-- once this commits: the handlers running finish, and no job of a key starts until
-- fewer than the new limit of them run, those holding places above it included
-- (places: how many of each key's places a handler may hold, raised here, brought back
-- down by pgq.rotate). A change waits for the reserves that read the limit to commit
-- (each holds its lock shared), so that none admits a job under the higher limit after
-- a lowering commits. A raised limit wakes, per key, as many of its waiting jobs as it
-- adds places, those such reserves left waiting included.
CREATE OR REPLACE FUNCTION pgq.define_concurrency(name text, "limit" int) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was int;
BEGIN
    PERFORM pgq._check_name('limit', define_concurrency.name);
    IF define_concurrency."limit" IS NULL OR define_concurrency."limit" NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'pgq: a concurrency limit is 1 to 1000 handlers, got %', define_concurrency."limit" USING ERRCODE = '22023';
    END IF;
    -- The limit this one replaces: read under the row's lock, which a concurrent change waits for.
    SELECT l."limit" INTO v_was FROM pgq.concurrency_limits l WHERE l.name = define_concurrency.name FOR UPDATE;
    -- A change waits for the reserves that read the limit: a lowering holds once it
    -- commits, and a raise wakes the jobs they left waiting (a statement after the lock).
    IF v_was <> define_concurrency."limit" THEN
        PERFORM pg_advisory_xact_lock((pgq._concurrency_lock_ids('limit', ARRAY[define_concurrency.name]))[1]);
    END IF;
    INSERT INTO pgq.concurrency_limits AS l (name, "limit", places)
    VALUES (define_concurrency.name, define_concurrency."limit", define_concurrency."limit")
    ON CONFLICT ON CONSTRAINT concurrency_limits_pkey
    DO UPDATE SET "limit" = EXCLUDED."limit", places = greatest(l.places, EXCLUDED."limit"), updated_at = now();
    IF v_was < define_concurrency."limit" THEN
        PERFORM pgq._wake_waiting(k.keys, array_fill(define_concurrency."limit" - v_was::bigint, ARRAY[cardinality(k.keys)]))
        FROM (SELECT array_agg(DISTINCT w.waits_on) AS keys FROM pgq.jobs w
              WHERE w.waits_on IS NOT NULL
                AND (w.waits_on = '@' || define_concurrency.name OR starts_with(w.waits_on, '@' || define_concurrency.name || ':['))) k
        WHERE k.keys IS NOT NULL;
    END IF;
    RETURN format('concurrency limit %s: at most %s at once per key, across every worker',
                  define_concurrency.name, define_concurrency."limit");
END;
$$;

COMMENT ON FUNCTION pgq.define_concurrency(text, int) IS
    'Creates or updates a named concurrency limit: at most "limit" handlers of a key at once, across every worker (S99). Returns it as a line of text.';

-- pgq.drop_concurrency: deletes a named concurrency limit, refused (2BP01) while a job
-- class, a schedule or a running chain names it. Jobs already dispatched with it are
-- admitted from then on. False when there was none.
CREATE OR REPLACE FUNCTION pgq.drop_concurrency(name text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgq._refuse_named_limit('concurrency_limited', drop_concurrency.name);
    DELETE FROM pgq.concurrency_limits l WHERE l.name = drop_concurrency.name;
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION pgq.drop_concurrency(text) IS
    'Deletes a named concurrency limit, unless a job class, schedule or running chain names it (2BP01); jobs already dispatched with it are admitted. False when there was none (S99).';
