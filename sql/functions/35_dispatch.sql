-- Dispatch (S1-S4): the only way a job comes to exist, in the caller's transaction; wake-ups for napping workers.

-- pgq._notify: sends the pgq_jobs wake-up for queue on commit if a worker of the queue
-- naps, and holds the queue's dispatching lock (shared) until the transaction ends.
-- The CASE tests the nap lock and releases it in one expression: no interrupt can come
-- between the two, so the session-level try never outlives the call.
CREATE OR REPLACE FUNCTION pgq._notify(queue text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key int := hashtext(_notify.queue);
BEGIN
    -- The dispatching lock first, then the nap lock (pgq._lock_space): in this order a
    -- nap registered after the test below still waits for this transaction.
    IF pg_try_advisory_xact_lock_shared(pgq._lock_space('dispatching'), v_key) THEN
        IF (CASE WHEN pg_try_advisory_lock(pgq._lock_space('nap'), v_key)
                 THEN pg_advisory_unlock(pgq._lock_space('nap'), v_key) ELSE false END) THEN
            RETURN;  -- nobody naps on this queue: its workers will reserve again by themselves
        END IF;
    END IF;
    PERFORM pg_notify('pgq_jobs', _notify.queue);
END;
$$;

COMMENT ON FUNCTION pgq._notify(text) IS 'Wakes napping workers of a queue on commit (pgq_jobs), and holds the queue''s dispatching lock until the transaction ends.';

-- pgq._check_dispatch_limits: what a dispatch may not choose (S43). A producer may call
-- pgq.dispatch, but the job's handler, and a timeout of 0 (none), belong to its class,
-- which only pgq_admin defines: a job without a timeout holds a worker's slot (and a SQL
-- handler a connection) for ever. Priority is kept to -100..100, so that no producer
-- can put its jobs beyond what the others may use. A payload is at most 8 MiB: a worker
-- holds a whole reserve's payloads in memory. Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_dispatch_limits(
    p_timeout int, p_priority int, p_payloads jsonb[], p_delay interval, p_retry_until timestamptz, p_retry_for interval
) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_payloads IS NULL OR array_position(p_payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: payload must be JSON, got NULL' USING ERRCODE = '22023';
    END IF;
    IF p_timeout = 0 THEN
        RAISE EXCEPTION 'pgq: a dispatch cannot set timeout 0 (no timeout): declare it on the job class (pgq.define_job)'
            USING ERRCODE = '22023';
    END IF;
    IF p_priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION 'pgq: priority must be between -100 and 100, got %', p_priority USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM unnest(p_payloads) p WHERE pg_column_size(p) > 8388608) THEN
        RAISE EXCEPTION 'pgq: a payload is at most 8 MiB, got one of % bytes',
            (SELECT max(pg_column_size(p)) FROM unnest(p_payloads) p) USING ERRCODE = '22023';
    END IF;
    IF p_delay < interval '0' THEN
        RAISE EXCEPTION 'pgq: delay must not be negative, got %', p_delay USING ERRCODE = '22023';
    END IF;
    IF p_retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', p_retry_for USING ERRCODE = '22023';
    END IF;
    IF p_retry_until IS NOT NULL AND p_retry_for IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: give retry_until or retry_for, not both' USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_dispatch_limits(int, int, jsonb[], interval, timestamptz, interval) IS 'Raises 22023 for what a dispatch may not choose: no payload, timeout 0, a priority outside -100..100, a payload over 8 MiB, a negative delay, a retry_for not positive or with retry_until (S43).';

-- pgq._may_exceed_ceilings: whether the login role may dispatch past the ceilings
-- (S90): it may define job classes (a member of pgq's admin or owner role, or a
-- superuser), so it could declare any value on a class anyway. session_user, as
-- pgq.actions records it: inside pgq's functions current_user is pgq's owner.
CREATE OR REPLACE FUNCTION pgq._may_exceed_ceilings() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pgq.roles r
                   WHERE r.kind IN ('admin', 'owner') AND to_regrole(quote_ident(r.name)) IS NOT NULL
                     AND pg_has_role(session_user, r.name, 'MEMBER'));
$$;

COMMENT ON FUNCTION pgq._may_exceed_ceilings() IS 'Whether the login role may define job classes (admin, owner, superuser), and so dispatch past the ceilings (S90).';

-- pgq._dispatch_ceilings: checks the options a dispatch set itself against what the job
-- class allows (S90). Each is accepted when it is no looser than the class's own value,
-- or within the class's ceiling, or, where the class declares none or there is no
-- class, within the database's (S91): tries at most max_tries (0, unlimited, only under a
-- ceiling of 0); a deadline at most max_retry_for from now ('infinity' never);
-- max_exceptions at most max_tries; every backoff entry at least min_backoff; timeout at
-- most max_timeout. Raises 22023 naming the option and its ceiling, unless the login
-- role may define classes itself. Returns the max_exceptions the job gets when the
-- dispatch set a deadline beyond its class's own: a deadline buys time, not attempts,
-- so the job fails at its max_tries-th exception (S10) unless max_tries is 0. NULL
-- otherwise: the job's max_exceptions is what the dispatch or the class says.
CREATE OR REPLACE FUNCTION pgq._dispatch_ceilings(
    p_job text, p_class pgq.job_classes, p_tries int, p_backoff int[], p_retry_until timestamptz,
    p_max_exceptions int, p_timeout int
) RETURNS int
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Each ceiling is read only when an option goes beyond the class's own value.
    v_max_tries   int;
    v_max_for     interval;
    v_min_backoff int;
    v_max_timeout int;
    v_beyond      boolean := false;  -- the dispatch set a deadline beyond the class's own
    v_problem     text;
    v_ceiling     text;
BEGIN
    IF p_tries IS NOT NULL AND NOT coalesce(p_class.tries = 0 OR p_tries BETWEEN 1 AND p_class.tries, false) THEN
        v_max_tries := coalesce(p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF NOT (v_max_tries = 0 OR p_tries BETWEEN 1 AND v_max_tries) THEN
            v_ceiling := 'max_tries';
            v_problem := format('tries %s: its ceiling is max_tries %s',
                                CASE WHEN p_tries = 0 THEN '0 (unlimited)' ELSE p_tries::text END, v_max_tries);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_retry_until IS NOT NULL
       AND NOT coalesce(p_retry_until <= now() + p_class.retry_for, false) THEN
        v_beyond := true;
        v_max_for := coalesce(p_class.max_retry_for, pgq._ceiling_interval('max_retry_for'));
        IF p_retry_until > now() + v_max_for THEN
            v_ceiling := 'max_retry_for';
            v_problem := format('a retry deadline of %s: its ceiling is max_retry_for %s from now', p_retry_until, v_max_for);
        END IF;
    END IF;
    -- Within the class's own only when it has one: no class, or a class that sets none,
    -- leaves the ceiling to say (as for tries and timeout).
    IF v_problem IS NULL AND p_max_exceptions IS NOT NULL
       AND (v_beyond OR NOT coalesce(p_max_exceptions <= p_class.max_exceptions, false)) THEN
        v_max_tries := coalesce(v_max_tries, p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF v_max_tries > 0 AND p_max_exceptions > v_max_tries THEN
            v_ceiling := 'max_tries';
            v_problem := format('max_exceptions %s: its ceiling is max_tries %s', p_max_exceptions, v_max_tries);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_backoff IS NOT NULL AND p_backoff IS DISTINCT FROM p_class.backoff THEN
        v_min_backoff := coalesce(p_class.min_backoff, pgq._ceiling_int('min_backoff'));
        IF EXISTS (SELECT FROM unnest(p_backoff) b WHERE b < v_min_backoff) THEN
            v_ceiling := 'min_backoff';
            v_problem := format('backoff %s: its ceiling is min_backoff %s seconds for every entry', p_backoff, v_min_backoff);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_timeout IS NOT NULL
       AND NOT coalesce(p_class.timeout = 0 OR p_timeout <= p_class.timeout, false) THEN
        v_max_timeout := coalesce(p_class.max_timeout, pgq._ceiling_int('max_timeout'));
        IF p_timeout > v_max_timeout THEN
            v_ceiling := 'max_timeout';
            v_problem := format('timeout %s: its ceiling is max_timeout %s seconds', p_timeout, v_max_timeout);
        END IF;
    END IF;

    IF v_problem IS NOT NULL THEN
        IF pgq._may_exceed_ceilings() THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'pgq: a dispatch of % may not set %', p_job, v_problem
            USING ERRCODE = '22023',
                  HINT = CASE WHEN p_class.name IS NOT NULL
                              THEN format('An admin may raise it on the job class: pgq.define_job(%L, …, %s => …).', p_job, v_ceiling)
                              ELSE format('%s has no job class: its ceiling is the database''s, which an admin sets with ALTER DATABASE %I SET pgq.%s = …, or define a class for it.',
                                          p_job, current_database(), v_ceiling) END;
    END IF;
    IF v_beyond THEN
        v_max_tries := coalesce(v_max_tries, p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF v_max_tries > 0 AND NOT pgq._may_exceed_ceilings() THEN
            RETURN least(coalesce(p_max_exceptions, p_class.max_exceptions, v_max_tries), v_max_tries);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._dispatch_ceilings(text, pgq.job_classes, int, int[], timestamptz, int, int) IS
    'Raises 22023 when a dispatch''s own tries, deadline, max_exceptions, backoff or timeout is looser than its class allows (S90, S91); returns the max_exceptions of a job whose deadline the dispatch set beyond its class''s.';

-- pgq._trace_context: the W3C trace context a dispatch stores with its jobs (S105,
-- S106): the options traceparent and tracestate when traceparent is given, else the
-- settings pgq.traceparent and pgq.tracestate of the transaction (SET LOCAL), else
-- none. A traceparent must be version 00 in lower-case hex, with a trace id and a span
-- id not all zero; a tracestate at most 32 comma-separated key=value members in at most
-- 512 characters, and only with a traceparent. Raises 22023 naming the bad value.
CREATE OR REPLACE FUNCTION pgq._trace_context(p_traceparent text, p_tracestate text,
                                              OUT traceparent text, OUT tracestate text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_from text := 'option';
BEGIN
    traceparent := p_traceparent;
    tracestate := p_tracestate;
    IF p_traceparent IS NULL THEN
        IF p_tracestate IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: tracestate % needs a traceparent', quote_literal(p_tracestate) USING ERRCODE = '22023';
        END IF;
        v_from := 'setting pgq.traceparent';
        traceparent := nullif(current_setting('pgq.traceparent', true), '');
        tracestate := CASE WHEN traceparent IS NOT NULL THEN nullif(current_setting('pgq.tracestate', true), '') END;
    END IF;
    IF traceparent IS NULL THEN
        RETURN;
    END IF;
    IF traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       OR substr(traceparent, 4, 32) = repeat('0', 32) OR substr(traceparent, 37, 16) = repeat('0', 16) THEN
        RAISE EXCEPTION 'pgq: traceparent (%) must be 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero, got %',
            v_from, quote_literal(traceparent) USING ERRCODE = '22023';
    END IF;
    IF tracestate IS NOT NULL AND (
           octet_length(tracestate) > 512
           OR (SELECT count(*) FROM regexp_split_to_table(tracestate, ',') m WHERE btrim(m, E' \t') <> '') > 32
           OR EXISTS (SELECT FROM regexp_split_to_table(tracestate, ',') m
                      WHERE btrim(m, E' \t') <> ''
                        AND btrim(m, E' \t') !~ '^[a-z0-9][_0-9a-z*/@-]{0,255}=[\x21-\x2b\x2d-\x3c\x3e-\x7e]([\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,254}[\x21-\x2b\x2d-\x3c\x3e-\x7e])?$')) THEN
        RAISE EXCEPTION 'pgq: tracestate (%) must be at most 32 comma-separated key=value members in 512 characters, got %',
            replace(v_from, 'traceparent', 'tracestate'), quote_literal(tracestate) USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._trace_context(text, text) IS
    'The W3C trace context a dispatch stores: the options, else the settings pgq.traceparent and pgq.tracestate; raises 22023 for an invalid one (S105, S106).';

-- pgq._dispatch_keyed: the jobs of a unique or debounced dispatch, one payload at a
-- time, since each takes its key's lock (S21, S24) before it is stored. A unique job
-- whose key a live holder has is dropped: its place in the answer is NULL. A debounced
-- job waits until the key's burst has been quiet for debounce_for, or at most
-- debounce_max_wait after the burst began.
CREATE OR REPLACE FUNCTION pgq._dispatch_keyed(
    p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean,
    p_unique_key text, p_unique_for interval, p_unique_until text,
    p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job          pgq.jobs := p_job;
    v_unique_for   interval := coalesce(p_unique_for, p_class.unique_for);
    v_debounce_for interval := coalesce(p_debounce_for, p_class.debounce_for);
    v_max_wait     interval := coalesce(p_debounce_max_wait, p_class.debounce_max_wait);
    v_explicit     text := CASE WHEN p_unique THEN p_unique_key ELSE p_debounce_key END;
    v_by           text[] := CASE WHEN p_unique THEN p_class.unique_by ELSE p_class.debounce_by END;
    v_n            int := cardinality(p_payloads);
    v_ukeys        text[];  -- the unique or debounce key of each payload
    v_uuids        uuid[] := pgq._uuid7s(v_n);
    v_burst        timestamptz;
BEGIN
    IF NOT p_unique AND v_debounce_for IS NULL THEN
        RAISE EXCEPTION 'pgq: a debounced dispatch of % needs debounce_for', p_job.job USING ERRCODE = '22023';
    END IF;
    -- Every payload's key in one call, as pgq._check_middleware_keys does (a call of
    -- pgq._key per payload would cost more than the rest); pgq._key raises for the
    -- first that cannot be computed or is too long (S38).
    v_ukeys := pgq._keys_or_null(array_fill(p_job.job, ARRAY[v_n]), array_fill(v_explicit, ARRAY[v_n]),
                                 array_fill(to_jsonb(v_by), ARRAY[v_n]), p_payloads);
    PERFORM pgq._key(p_job.job, v_explicit, v_by, p_payloads[k.n])
    FROM generate_subscripts(v_ukeys, 1) k(n)
    WHERE v_ukeys[k.n] IS NULL OR octet_length(v_ukeys[k.n]) > pgq._max_key_bytes()
    ORDER BY k.n;
    FOR i IN 1 .. v_n LOOP
        v_job.uuid := v_uuids[i];
        v_job.payload := p_payloads[i];
        IF p_unique THEN
            v_job.unique_key := v_ukeys[i];
            v_job.unique_token := gen_random_uuid();
            v_job.unique_until := coalesce(p_unique_until, p_class.unique_until, 'processed');
            IF NOT pgq._take_unique(v_job.unique_key, v_job.unique_token, v_job.uuid, v_unique_for) THEN
                RETURN NEXT NULL;  -- dropped: a live holder has the key (S21)
                CONTINUE;
            END IF;
        ELSE
            v_job.debounce_key := v_ukeys[i];
            v_job.debounce_token := gen_random_uuid();
            v_burst := pgq._take_debounce(v_job.debounce_key, v_job.debounce_token, v_job.uuid);
            v_job.available_at := greatest(now() + coalesce(p_delay, interval '0'),
                                           least(now() + v_debounce_for, v_burst + v_max_wait));
        END IF;
        PERFORM pgq._store(v_job, ARRAY[p_payloads[i]], ARRAY[v_job.uuid], ARRAY[p_keys[i]]);
        RETURN NEXT v_job.uuid;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._dispatch_keyed(pgq.jobs, pgq.job_classes, jsonb[], jsonb[], boolean, text, interval, text, text, interval, interval, interval) IS
    'The jobs of a unique or debounced dispatch, each behind its key (S21-S24): NULL in the answer for a unique job dropped.';

-- pgq._dispatch: the body of pgq.dispatch_many (see there), with the batch and chain the
-- jobs belong to (pgq.dispatch_batch, pgq.dispatch_chain: S70-S76) written by the same
-- insert. p_ceilings false skips the ceilings of S90, for options an admin chose (a
-- schedule's) or that were checked when their chain was dispatched (its later steps,
-- queued in a worker's transaction). Not SECURITY DEFINER: only pgq's own functions
-- call it.
CREATE OR REPLACE FUNCTION pgq._dispatch(
    job text, payloads jsonb[], queue text DEFAULT NULL, delay interval DEFAULT NULL,
    -- retries (S5-S10)
    tries int DEFAULT NULL, backoff int[] DEFAULT NULL, retry_until timestamptz DEFAULT NULL,
    max_exceptions int DEFAULT NULL, timeout int DEFAULT NULL, fail_on_timeout boolean DEFAULT NULL,
    priority int DEFAULT 0,
    -- unique jobs and debouncing (S21-S25)
    unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL, unique_until text DEFAULT NULL,
    debounce_key text DEFAULT NULL, debounce_for interval DEFAULT NULL, debounce_max_wait interval DEFAULT NULL,
    middleware jsonb DEFAULT NULL, retry_for interval DEFAULT NULL,
    -- batches and chains (S70-S76); false: no ceilings (S90)
    p_batch_id uuid DEFAULT NULL, p_chain_id uuid DEFAULT NULL, p_chain_step int DEFAULT NULL, p_ceilings boolean DEFAULT true,
    traceparent text DEFAULT NULL, tracestate text DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_class     pgq.job_classes;
    v_queue     text;
    v_job       pgq.jobs;
    v_unique    boolean;
    v_debounce  boolean;
    v_uuids     uuid[];
    v_keys      jsonb[];  -- the middleware keys of each payload (S38), kept in the row
    v_max_exceptions int;  -- set by the ceilings (S90)
BEGIN
    PERFORM pgq._check_name('job', _dispatch.job);
    SELECT * INTO v_class FROM pgq.job_classes c WHERE c.name = _dispatch.job;
    v_queue := coalesce(_dispatch.queue, v_class.queue, 'default');
    PERFORM pgq._check_name('queue', v_queue);
    PERFORM pgq._check_settings(_dispatch.tries, _dispatch.backoff, _dispatch.max_exceptions,
                                _dispatch.timeout, _dispatch.priority);
    PERFORM pgq._check_dispatch_limits(_dispatch.timeout, _dispatch.priority, _dispatch.payloads,
                                       _dispatch.delay, _dispatch.retry_until, _dispatch.retry_for);
    IF _dispatch.p_ceilings AND num_nonnulls(_dispatch.tries, _dispatch.backoff, _dispatch.retry_until, _dispatch.retry_for,
                                             _dispatch.max_exceptions, _dispatch.timeout) > 0 THEN
        v_max_exceptions := pgq._dispatch_ceilings(_dispatch.job, v_class, _dispatch.tries, _dispatch.backoff,
                                                   coalesce(_dispatch.retry_until, now() + _dispatch.retry_for),
                                                   _dispatch.max_exceptions, _dispatch.timeout);
    END IF;
    v_unique := _dispatch.unique_key IS NOT NULL OR _dispatch.unique_for IS NOT NULL
             OR _dispatch.unique_until IS NOT NULL OR v_class.unique_until IS NOT NULL;
    v_debounce := _dispatch.debounce_key IS NOT NULL OR _dispatch.debounce_for IS NOT NULL
               OR _dispatch.debounce_max_wait IS NOT NULL
               OR v_class.debounce_for IS NOT NULL OR v_class.debounce_by IS NOT NULL;
    PERFORM pgq._check_unique_debounce(v_unique, v_debounce, _dispatch.unique_for, _dispatch.unique_until,
                                       _dispatch.debounce_for, _dispatch.debounce_max_wait);
    PERFORM pgq._check_middleware(_dispatch.middleware);
    IF _dispatch.traceparent IS NOT NULL OR _dispatch.tracestate IS NOT NULL
       OR current_setting('pgq.traceparent', true) <> '' THEN
        SELECT t.traceparent, t.tracestate INTO v_job.traceparent, v_job.tracestate
        FROM pgq._trace_context(_dispatch.traceparent, _dispatch.tracestate) t;
    END IF;

    -- The frozen settings (S1), shared by every payload.
    v_job.job := _dispatch.job;
    v_job.batch_id := _dispatch.p_batch_id;
    v_job.chain_id := _dispatch.p_chain_id;
    v_job.chain_step := _dispatch.p_chain_step;
    v_job.queue := v_queue;
    v_job.priority := _dispatch.priority;
    v_job.handler := v_class.handler;
    v_job.tries := coalesce(_dispatch.tries, v_class.tries);
    v_job.backoff := coalesce(_dispatch.backoff, v_class.backoff);
    v_job.max_exceptions := coalesce(v_max_exceptions, _dispatch.max_exceptions, v_class.max_exceptions);
    v_job.timeout := coalesce(_dispatch.timeout, v_class.timeout);
    v_job.fail_on_timeout := coalesce(_dispatch.fail_on_timeout, v_class.fail_on_timeout, false);
    -- retry_for is turned into the retry_until timestamp here, by the database's clock (S1)
    v_job.retry_until := coalesce(_dispatch.retry_until, now() + _dispatch.retry_for, now() + v_class.retry_for);
    v_job.available_at := now() + coalesce(_dispatch.delay, interval '0');
    v_job.middleware := coalesce(_dispatch.middleware, v_class.middleware);
    -- Every key of the middleware must be computable from every payload and storable:
    -- a bad key would otherwise only surface when the job is reserved or reported (S38).
    IF v_job.middleware IS NOT NULL THEN
        v_keys := pgq._check_middleware_keys(_dispatch.job, v_job.middleware, _dispatch.payloads);
    END IF;

    IF NOT v_unique AND NOT v_debounce THEN
        -- Every payload becomes a job, so the uuids made here are the answer, with no
        -- RETURNING clause to pay for.
        v_uuids := pgq._uuid7s(cardinality(_dispatch.payloads));
        PERFORM pgq._store(v_job, _dispatch.payloads, v_uuids, v_keys);
        RETURN QUERY SELECT unnest(v_uuids);
    ELSE
        RETURN QUERY SELECT * FROM pgq._dispatch_keyed(v_job, v_class, _dispatch.payloads, v_keys, v_unique,
            _dispatch.unique_key, _dispatch.unique_for, _dispatch.unique_until,
            _dispatch.debounce_key, _dispatch.debounce_for, _dispatch.debounce_max_wait, _dispatch.delay);
    END IF;

    IF coalesce(_dispatch.delay, interval '0') = interval '0' AND NOT v_debounce THEN
        PERFORM pgq._notify(v_queue);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._dispatch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, int, boolean, text, text) IS
    'The body of pgq.dispatch_many, with the batch and chain the jobs belong to (S70-S76) and whether the ceilings apply (S90); returns their uuids in payload order (NULL for a unique duplicate dropped).';

-- pgq.dispatch_many: queues one job per payload, all with the same job name and
-- options, in the caller's transaction (S2). Per-dispatch options override the job
-- class, looser than its own only up to its ceilings or the database's (S90, S91); a
-- job with no class is allowed (worker defaults apply). Napping workers of the
-- queue are woken by a NOTIFY sent on commit, unless the jobs are delayed (pgq._notify).
-- Unique jobs (S21): each takes its lock row in this transaction; a job whose key is
-- locked by a live holder is dropped and its uuid is NULL in the result. Debounced jobs
-- (S24): each writes a new current token for its key and waits debounce_for (capped by
-- debounce_max_wait after the first dispatch of the burst). Both at once: 22023 (S25).
-- State change: (nothing) -> waiting. Raises 22023 for bad input, writing nothing (S4).
-- Returns one uuid (or NULL) per payload, in payload order.
CREATE OR REPLACE FUNCTION pgq.dispatch_many(
    job             text,
    payloads        jsonb[],
    queue           text DEFAULT NULL,
    delay           interval DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    retry_until     timestamptz DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    priority        int DEFAULT 0,
    unique_key      text DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    debounce_key    text DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL,
    retry_for       interval DEFAULT NULL,
    traceparent     text DEFAULT NULL,
    tracestate      text DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- plpgsql, whose set-returning functions hand back all their rows at once: a LANGUAGE
    -- sql one is entered again for each row, and each entry of a function with SET saves
    -- and restores the settings.
    RETURN QUERY
    SELECT * FROM pgq._dispatch(dispatch_many.job, dispatch_many.payloads, dispatch_many.queue,
                                dispatch_many.delay, dispatch_many.tries, dispatch_many.backoff,
                                dispatch_many.retry_until, dispatch_many.max_exceptions,
                                dispatch_many.timeout, dispatch_many.fail_on_timeout, dispatch_many.priority,
                                dispatch_many.unique_key, dispatch_many.unique_for,
                                dispatch_many.unique_until, dispatch_many.debounce_key,
                                dispatch_many.debounce_for, dispatch_many.debounce_max_wait,
                                dispatch_many.middleware, dispatch_many.retry_for,
                                traceparent => dispatch_many.traceparent, tracestate => dispatch_many.tracestate);
END;
$$;

COMMENT ON FUNCTION pgq.dispatch_many(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text) IS
    'Queues one job per payload with shared options, in the caller''s transaction; returns their uuids in payload order (NULL for a unique duplicate dropped).';

-- pgq.dispatch: queues one job and returns its uuid, or NULL when a unique lock dropped
-- it. See pgq.dispatch_many.
CREATE OR REPLACE FUNCTION pgq.dispatch(
    job             text,
    payload         jsonb DEFAULT '{}',
    queue           text DEFAULT NULL,
    delay           interval DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    retry_until     timestamptz DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    priority        int DEFAULT 0,
    unique_key      text DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    debounce_key    text DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL,
    retry_for       interval DEFAULT NULL,
    traceparent     text DEFAULT NULL,
    tracestate      text DEFAULT NULL
) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
-- plpgsql, which keeps its statement's plan for the session: a LANGUAGE sql function
-- that is not inlined (none with SET is) parses and plans its body in every transaction.
DECLARE
    v_uuid uuid;
BEGIN
    SELECT d INTO v_uuid
    FROM pgq.dispatch_many(dispatch.job, ARRAY[dispatch.payload], dispatch.queue, dispatch.delay,
                           dispatch.tries, dispatch.backoff, dispatch.retry_until,
                           dispatch.max_exceptions, dispatch.timeout, dispatch.fail_on_timeout,
                           dispatch.priority, dispatch.unique_key, dispatch.unique_for, dispatch.unique_until,
                           dispatch.debounce_key, dispatch.debounce_for, dispatch.debounce_max_wait,
                           dispatch.middleware, dispatch.retry_for, dispatch.traceparent, dispatch.tracestate) d;
    RETURN v_uuid;
END;
$$;

COMMENT ON FUNCTION pgq.dispatch(text, jsonb, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text) IS
    'Queues one job in the caller''s transaction and returns its uuid (NULL: dropped as a unique duplicate). Options override the job class (S1).';

-- pgq.stage_dispatch: the COPY path of a bulk dispatch, step 1 (S68). Makes sure this
-- session has its staging table pg_temp.pgq_staged_payloads (payload jsonb), empty at
-- the start of each transaction (ON COMMIT DELETE ROWS), into which the caller may
-- COPY payloads; pgq.dispatch_staged then queues them. The table belongs to pgq's
-- owner, so that pgq.dispatch_staged reads nothing a caller defined; it may be
-- written by PUBLIC, which is only ever this session: no session can reach another's
-- temporary tables. Returns the table's name. Raises 42P07 when a table of that name
-- that pgq did not make is in the way.
CREATE OR REPLACE FUNCTION pgq.stage_dispatch() RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF to_regclass('pg_temp.pgq_staged_payloads') IS NULL THEN
        CREATE TEMPORARY TABLE pgq_staged_payloads (payload jsonb) ON COMMIT DELETE ROWS;
        GRANT INSERT ON pg_temp.pgq_staged_payloads TO PUBLIC;
    END IF;
    PERFORM pgq._staged_payloads_checked();
    RETURN 'pg_temp.pgq_staged_payloads';
END;
$$;

COMMENT ON FUNCTION pgq.stage_dispatch() IS
    'Bulk dispatch, step 1: this session''s staging table pg_temp.pgq_staged_payloads (payload jsonb) for COPY; then pgq.dispatch_staged (S68).';

-- pgq._staged_payloads_checked: raises 42P07 unless pg_temp.pgq_staged_payloads is the
-- plain temporary table pgq.stage_dispatch made (owned by pgq's owner): a caller's own
-- table, view or function of that name must never be read with pgq's rights.
CREATE OR REPLACE FUNCTION pgq._staged_payloads_checked() RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_class c
                   WHERE c.oid = to_regclass('pg_temp.pgq_staged_payloads')
                     AND c.relkind = 'r' AND c.relpersistence = 't'
                     AND c.relowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)) THEN
        RAISE EXCEPTION 'pgq: pg_temp.pgq_staged_payloads is not the staging table of pgq.stage_dispatch (missing, or made by someone else)'
            USING ERRCODE = '42P07';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._staged_payloads_checked() IS 'Raises 42P07 unless pg_temp.pgq_staged_payloads is the staging table pgq.stage_dispatch made (S68).';

-- pgq._staged_batch: the fewest payloads pgq.dispatch_staged queues in one call (all
-- that is left, when less is): the memory it holds at once is about this many payloads.
CREATE OR REPLACE FUNCTION pgq._staged_batch() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 16384 $$;

COMMENT ON FUNCTION pgq._staged_batch() IS 'The fewest payloads pgq.dispatch_staged queues in one call of pgq.dispatch_many (S68).';

-- pgq._dispatch_staged_batch: pgq.dispatch_many of some of the staged payloads, as one
-- array of uuids in their order.
CREATE OR REPLACE FUNCTION pgq._dispatch_staged_batch(
    p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries int, p_backoff int[],
    p_retry_until timestamptz, p_max_exceptions int, p_timeout int, p_fail_on_timeout boolean, p_priority int,
    p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval,
    p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text
) RETURNS uuid[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN ARRAY(
        SELECT u FROM pgq.dispatch_many(p_job, p_payloads, p_queue, p_delay, p_tries, p_backoff, p_retry_until,
                                        p_max_exceptions, p_timeout, p_fail_on_timeout, p_priority, p_unique_key,
                                        p_unique_for, p_unique_until, p_debounce_key, p_debounce_for,
                                        p_debounce_max_wait, p_middleware, p_retry_for, p_traceparent, p_tracestate) u);
END;
$$;

COMMENT ON FUNCTION pgq._dispatch_staged_batch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text) IS
    'pgq.dispatch_many of some staged payloads, returning their uuids as one array in order (S68).';

-- pgq.dispatch_staged: the COPY path of a bulk dispatch, step 2 (S68). Queues one job
-- per row staged in pg_temp.pgq_staged_payloads since its last call in this
-- transaction (in the order COPY wrote them) through pgq.dispatch_many, so every job
-- is validated and written exactly as pgq.dispatch would. Returns the uuids in row order,
-- as one array (NULL for a unique duplicate dropped). Raises as pgq.dispatch_many, and
-- 42P07 when the staging table is not pgq's. State change: (nothing) -> waiting.
-- The rows are read a range of pages at a time and queued in calls of at least
-- pgq._staged_batch() payloads, so that the memory a dispatch of millions of rows takes
-- is bounded, and each call is large enough to be kept together (pgq._store_bulk, S85):
-- a last call takes every row left once fewer than that would be left after it.
CREATE OR REPLACE FUNCTION pgq.dispatch_staged(
    job             text,
    queue           text DEFAULT NULL,
    delay           interval DEFAULT NULL,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    retry_until     timestamptz DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    priority        int DEFAULT 0,
    unique_key      text DEFAULT NULL,
    unique_for      interval DEFAULT NULL,
    unique_until    text DEFAULT NULL,
    debounce_key    text DEFAULT NULL,
    debounce_for    interval DEFAULT NULL,
    debounce_max_wait interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL,
    retry_for       interval DEFAULT NULL,
    traceparent     text DEFAULT NULL,
    tracestate      text DEFAULT NULL
) RETURNS uuid[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The last row an earlier call of this transaction queued. The rows are not deleted:
    -- the table is emptied at commit anyway (ON COMMIT DELETE ROWS). The mark is local to
    -- the transaction, as the rows are, and a rollback to a savepoint takes it back with
    -- the jobs it queued.
    v_from     tid := coalesce(nullif(current_setting('pgq.staged_upto', true), ''), '(0,0)')::tid;
    v_left     bigint;        -- rows not read yet
    v_page     bigint;        -- the first page of the next range
    v_pages    bigint;
    v_payloads jsonb[] := '{}';  -- read, not queued yet
    v_read     jsonb[];
    v_n        bigint;
    v_upto     tid;
    v_uuids    uuid[] := '{}';
BEGIN
    PERFORM pgq._staged_payloads_checked();
    SELECT count(*), max(s.ctid) INTO v_left, v_upto FROM pg_temp.pgq_staged_payloads s WHERE s.ctid > v_from;
    IF v_upto IS NOT NULL THEN
        PERFORM set_config('pgq.staged_upto', v_upto::text, true);
    END IF;
    v_page := (v_from::text::point)[0]::bigint;
    v_pages := pg_relation_size('pg_temp.pgq_staged_payloads') / current_setting('block_size')::bigint;
    WHILE v_left > 0 AND v_page < v_pages LOOP
        -- A table COPY only appended to since it was emptied reads back in the order written.
        SELECT coalesce(array_agg(s.payload ORDER BY s.ctid), '{}'), count(*) INTO v_read, v_n
        FROM pg_temp.pgq_staged_payloads s
        WHERE s.ctid > v_from
          AND s.ctid >= format('(%s,0)', v_page)::tid AND s.ctid < format('(%s,0)', v_page + 1024)::tid;
        v_page := v_page + 1024;
        v_payloads := v_payloads || v_read;
        v_left := v_left - v_n;
        IF cardinality(v_payloads) >= greatest(pgq._staged_batch(), pgq._store_bulk())
           AND (v_left = 0 OR v_left >= pgq._store_bulk()) THEN
            v_uuids := v_uuids || pgq._dispatch_staged_batch(dispatch_staged.job, v_payloads, dispatch_staged.queue,
                dispatch_staged.delay, dispatch_staged.tries, dispatch_staged.backoff, dispatch_staged.retry_until,
                dispatch_staged.max_exceptions, dispatch_staged.timeout, dispatch_staged.fail_on_timeout,
                dispatch_staged.priority, dispatch_staged.unique_key, dispatch_staged.unique_for,
                dispatch_staged.unique_until, dispatch_staged.debounce_key, dispatch_staged.debounce_for,
                dispatch_staged.debounce_max_wait, dispatch_staged.middleware, dispatch_staged.retry_for,
                dispatch_staged.traceparent, dispatch_staged.tracestate);
            v_payloads := '{}';
        END IF;
    END LOOP;
    RETURN v_uuids || pgq._dispatch_staged_batch(dispatch_staged.job, v_payloads, dispatch_staged.queue,
        dispatch_staged.delay, dispatch_staged.tries, dispatch_staged.backoff, dispatch_staged.retry_until,
        dispatch_staged.max_exceptions, dispatch_staged.timeout, dispatch_staged.fail_on_timeout,
        dispatch_staged.priority, dispatch_staged.unique_key, dispatch_staged.unique_for,
        dispatch_staged.unique_until, dispatch_staged.debounce_key, dispatch_staged.debounce_for,
        dispatch_staged.debounce_max_wait, dispatch_staged.middleware, dispatch_staged.retry_for,
                dispatch_staged.traceparent, dispatch_staged.tracestate);
END;
$$;

COMMENT ON FUNCTION pgq.dispatch_staged(text, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text) IS
    'Bulk dispatch, step 2: queues the payloads staged by COPY into pg_temp.pgq_staged_payloads through pgq.dispatch_many (the same checks), those staged since its last call in the transaction; returns their uuids in order (S68).';
