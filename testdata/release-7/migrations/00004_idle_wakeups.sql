-- Wake-ups without a NOTIFY per dispatch (issue 6).
--
-- PostgreSQL serialises every committing transaction that has sent a NOTIFY: it takes a
-- global lock before commit and holds it until the commit is flushed. With a wake-up per
-- dispatch, producers on separate connections therefore committed one at a time, each
-- waiting out the other's WAL flush: in the steady-state benchmark the producers spent
-- as much time waiting on that lock ("Lock: object" in pg_stat_activity) as on their
-- own flush, and pgq ran at 8,000 jobs/s where the same run without the NOTIFY reached
-- 11,000.
--
-- A wake-up is only needed by a worker that is waiting for one. A busy worker reserves
-- again as soon as a handler returns. So a worker that runs out of work naps
-- (pgq.nap) and a dispatch notifies only while some worker of its queue is napping
-- (pgq._notify). The two meet on two advisory locks per queue (the two-key form, which
-- never collides with the one-key without_overlapping locks):
--
-- * nap lock: a napping session holds it shared until pgq.wake. A dispatch tests it
--   with a try of the exclusive mode, released at once: the try fails while anyone naps.
-- * dispatching lock: each dispatch holds it shared until its transaction ends. pgq.nap,
--   once registered, waits for it in exclusive mode, that is for every dispatch that was
--   under way and may have seen no napper, and the worker then reserves once more.
--
-- Either the dispatch saw the napper (and notifies on commit), or it took the
-- dispatching lock before the nap was registered, and then the nap waited for its
-- commit and the worker's next reserve sees its job. While pgq.nap waits, new dispatches
-- fail their try of the dispatching lock (a waiter conflicts) and notify. A dispatch
-- never waits on either lock.
--
-- pgq.dispatch_many is restated only to call pgq._notify, and to give unique and
-- debounced jobs v7 uuids like the others (00003).

-- +goose Up
-- +goose StatementBegin
-- pgq._notify: sends the pgq_jobs wake-up for queue on commit if a worker of the queue
-- naps, and holds the queue's dispatching lock (shared) until the transaction ends.
-- The CASE tests the nap lock and releases it in one expression: no interrupt can come
-- between the two, so the session-level try never outlives the call.
CREATE FUNCTION pgq._notify(queue text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key int := hashtext(_notify.queue);
BEGIN
    -- First keys: the dispatching lock is hashtext('pgq.dispatching'), the nap lock
    -- hashtext('pgq.nap'). The order matters: the dispatching lock first, so that a nap
    -- registered after the test below still waits for this transaction.
    IF pg_try_advisory_xact_lock_shared(-1140850413, v_key) THEN
        IF (CASE WHEN pg_try_advisory_lock(776776852, v_key)
                 THEN pg_advisory_unlock(776776852, v_key) ELSE false END) THEN
            RETURN;  -- nobody naps on this queue: its workers will reserve again by themselves
        END IF;
    END IF;
    PERFORM pg_notify('pgq_jobs', _notify.queue);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- pgq.wake: the session stops napping: it releases the nap locks pgq.nap took (listed in
-- the session setting pgq.napping). Dispatches no longer notify for it.
CREATE FUNCTION pgq.wake() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY coalesce(nullif(current_setting('pgq.napping', true), ''), '{}')::text[] LOOP
        PERFORM pg_advisory_unlock_shared(776776852, hashtext(q));
    END LOOP;
    PERFORM set_config('pgq.napping', '', false);
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.wake() IS
    'Worker protocol: the session stops napping (see pgq.nap); dispatches stop notifying for it.';

-- +goose StatementBegin
-- pgq.nap: a worker's session that found no job naps on queues: from now on every
-- dispatch to them sends a pgq_jobs NOTIFY on commit, until pgq.wake. Then it waits up
-- to wait for the dispatches already under way, which may have seen no napper, to end.
-- true: none is left, and the worker must reserve once more before it sleeps (their jobs
-- are visible now). false: one was still open after wait; the session naps anyway, and
-- the worker calls pgq.nap again later. Call it outside a transaction block, on the
-- worker's reserving session (the nap locks belong to the session); a second call
-- replaces the first. If the call fails, close the session: its nap locks may be left.
CREATE FUNCTION pgq.nap(queues text[], wait interval DEFAULT '10 milliseconds') RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    q         text;
    v_ok      boolean := true;
    v_napping text[] := '{}';
    v_timeout text := current_setting('lock_timeout');
BEGIN
    IF queues IS NULL OR cardinality(queues) = 0 OR array_position(queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: nap needs at least one queue, got %', queues USING ERRCODE = '22023';
    END IF;
    IF wait IS NULL OR wait < interval '1 millisecond' THEN
        RAISE EXCEPTION 'pgq: nap wait must be at least 1 millisecond, got %', wait USING ERRCODE = '22023';
    END IF;
    PERFORM pgq.wake();
    PERFORM set_config('lock_timeout', ceil(extract(epoch FROM wait) * 1000)::bigint || 'ms', true);
    FOREACH q IN ARRAY queues LOOP
        BEGIN
            -- Waits only while a dispatch tests the lock, an instant.
            PERFORM pg_advisory_lock_shared(776776852, hashtext(q));
            v_napping := array_append(v_napping, q);
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END LOOP;
    -- Outside any block that can roll back: pgq.wake must find every lock taken.
    PERFORM set_config('pgq.napping', v_napping::text, false);
    IF v_ok THEN
        BEGIN
            FOREACH q IN ARRAY queues LOOP
                PERFORM pg_advisory_xact_lock(-1140850413, hashtext(q));
            END LOOP;
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END IF;
    PERFORM set_config('lock_timeout', v_timeout, true);
    RETURN v_ok;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.nap(text[], interval) IS
    'Worker protocol: the session naps on queues (dispatches to them notify until pgq.wake) and waits up to wait for dispatches under way; true: reserve once more, then sleep.';

-- +goose StatementBegin
-- pgq.dispatch_many: queues one job per payload, all with the same job name and
-- options, in the caller's transaction (S2). Per-dispatch options override the job
-- class; a job with no class is allowed (worker defaults apply). Napping workers of the
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
    retry_for       interval DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_class     pgq.job_classes;
    v_queue     text;
    v_job       pgq.jobs;
    v_unique    boolean;
    v_debounce  boolean;
    v_payload   jsonb;
    v_burst     timestamptz;
    v_unique_for interval;
    v_debounce_for interval;
    v_max_wait  interval;
BEGIN
    PERFORM pgq._check_name('job', dispatch_many.job);
    SELECT * INTO v_class FROM pgq.job_classes c WHERE c.name = dispatch_many.job;
    v_queue := coalesce(dispatch_many.queue, v_class.queue, 'default');
    PERFORM pgq._check_name('queue', v_queue);
    PERFORM pgq._check_settings(dispatch_many.tries, dispatch_many.backoff, dispatch_many.max_exceptions,
                                dispatch_many.timeout, dispatch_many.priority);
    IF dispatch_many.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', dispatch_many.retry_for USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.retry_until IS NOT NULL AND dispatch_many.retry_for IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: give retry_until or retry_for, not both' USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.delay < interval '0' THEN
        RAISE EXCEPTION 'pgq: delay must not be negative, got %', dispatch_many.delay USING ERRCODE = '22023';
    END IF;
    IF dispatch_many.payloads IS NULL OR array_position(dispatch_many.payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: payload must be JSON, got NULL' USING ERRCODE = '22023';
    END IF;
    v_unique := dispatch_many.unique_key IS NOT NULL OR dispatch_many.unique_for IS NOT NULL
             OR dispatch_many.unique_until IS NOT NULL OR v_class.unique_until IS NOT NULL;
    v_debounce := dispatch_many.debounce_key IS NOT NULL OR dispatch_many.debounce_for IS NOT NULL
               OR dispatch_many.debounce_max_wait IS NOT NULL
               OR v_class.debounce_for IS NOT NULL OR v_class.debounce_by IS NOT NULL;
    PERFORM pgq._check_unique_debounce(v_unique, v_debounce, dispatch_many.unique_for, dispatch_many.unique_until,
                                       dispatch_many.debounce_for, dispatch_many.debounce_max_wait);
    PERFORM pgq._check_middleware(dispatch_many.middleware);

    -- The frozen settings (S1), shared by every payload.
    v_job.job := dispatch_many.job;
    v_job.queue := v_queue;
    v_job.priority := dispatch_many.priority;
    v_job.handler := v_class.handler;
    v_job.tries := coalesce(dispatch_many.tries, v_class.tries);
    v_job.backoff := coalesce(dispatch_many.backoff, v_class.backoff);
    v_job.max_exceptions := coalesce(dispatch_many.max_exceptions, v_class.max_exceptions);
    v_job.timeout := coalesce(dispatch_many.timeout, v_class.timeout);
    v_job.fail_on_timeout := coalesce(dispatch_many.fail_on_timeout, v_class.fail_on_timeout, false);
    -- retry_for is turned into the retry_until timestamp here, by the database's clock (S1)
    v_job.retry_until := coalesce(dispatch_many.retry_until, now() + dispatch_many.retry_for, now() + v_class.retry_for);
    v_job.available_at := now() + coalesce(dispatch_many.delay, interval '0');
    v_job.middleware := coalesce(dispatch_many.middleware, v_class.middleware);
    -- Every "by" of the middleware must find its fields in every payload: a key that
    -- cannot be computed would otherwise only surface at reserve time.
    IF v_job.middleware IS NOT NULL THEN
        PERFORM pgq._key(dispatch_many.job, NULL, pgq._texts(m.value -> 'by'), p.payload)
        FROM jsonb_array_elements(v_job.middleware) mw, jsonb_each(mw) m, unnest(dispatch_many.payloads) p(payload)
        WHERE m.value ? 'by';
    END IF;

    IF NOT v_unique AND NOT v_debounce THEN
        RETURN QUERY
        INSERT INTO pgq.jobs AS j
            (job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, available_at, middleware)
        SELECT v_job.job, v_job.queue, p.payload, v_job.priority, v_job.handler, v_job.tries, v_job.backoff,
               v_job.max_exceptions, v_job.timeout, v_job.fail_on_timeout, v_job.retry_until, v_job.available_at,
               v_job.middleware
        FROM unnest(dispatch_many.payloads) WITH ORDINALITY AS p(payload, n)
        ORDER BY p.n
        RETURNING j.uuid;
    ELSE
        v_unique_for := coalesce(dispatch_many.unique_for, v_class.unique_for);
        v_debounce_for := coalesce(dispatch_many.debounce_for, v_class.debounce_for);
        v_max_wait := coalesce(dispatch_many.debounce_max_wait, v_class.debounce_max_wait);
        IF v_debounce AND v_debounce_for IS NULL THEN
            RAISE EXCEPTION 'pgq: a debounced dispatch of % needs debounce_for', dispatch_many.job USING ERRCODE = '22023';
        END IF;
        FOREACH v_payload IN ARRAY dispatch_many.payloads LOOP
            v_job.uuid := pgq._uuid7();
            v_job.payload := v_payload;
            IF v_unique THEN
                v_job.unique_key := pgq._key(dispatch_many.job, dispatch_many.unique_key, v_class.unique_by, v_payload);
                v_job.unique_token := gen_random_uuid();
                v_job.unique_until := coalesce(dispatch_many.unique_until, v_class.unique_until, 'processed');
                -- Take the lock, or take over one that expired. A concurrent dispatch of
                -- the same key waits here for this transaction, then sees its lock row.
                -- Hazard: the WHERE may only read the lock row itself. A subquery (say, "is
                -- the owner job gone?") reads this statement's snapshot, which cannot see
                -- the job the other transaction just committed, and lets duplicates in.
                INSERT INTO pgq.unique_locks AS u (key, owner, job_uuid, expires_at)
                VALUES (v_job.unique_key, v_job.unique_token, v_job.uuid, now() + v_unique_for)
                ON CONFLICT (key) DO UPDATE
                    SET owner = EXCLUDED.owner, job_uuid = EXCLUDED.job_uuid,
                        expires_at = EXCLUDED.expires_at, created_at = now()
                    WHERE u.expires_at <= now();
                IF NOT FOUND THEN
                    RETURN NEXT NULL;  -- dropped: a live holder has the key (S21)
                    CONTINUE;
                END IF;
            ELSE
                v_job.debounce_key := pgq._key(dispatch_many.job, dispatch_many.debounce_key, v_class.debounce_by, v_payload);
                v_job.debounce_token := gen_random_uuid();
                INSERT INTO pgq.debounce_tokens AS d (key, token, job_uuid, burst_started_at)
                VALUES (v_job.debounce_key, v_job.debounce_token, v_job.uuid, now())
                ON CONFLICT (key) DO UPDATE
                    SET token = EXCLUDED.token, job_uuid = EXCLUDED.job_uuid, updated_at = now(),
                        burst_started_at = coalesce(d.burst_started_at, now())
                RETURNING d.burst_started_at INTO v_burst;
                v_job.available_at := greatest(now() + coalesce(dispatch_many.delay, interval '0'),
                                               least(now() + v_debounce_for, v_burst + v_max_wait));
            END IF;
            INSERT INTO pgq.jobs
                (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
                 fail_on_timeout, retry_until, available_at, unique_key, unique_token, unique_until,
                 debounce_key, debounce_token, middleware)
            VALUES (v_job.uuid, v_job.job, v_job.queue, v_job.payload, v_job.priority, v_job.handler, v_job.tries,
                    v_job.backoff, v_job.max_exceptions, v_job.timeout, v_job.fail_on_timeout, v_job.retry_until,
                    v_job.available_at, v_job.unique_key, v_job.unique_token, v_job.unique_until,
                    v_job.debounce_key, v_job.debounce_token, v_job.middleware);
            RETURN NEXT v_job.uuid;
        END LOOP;
    END IF;

    IF coalesce(dispatch_many.delay, interval '0') = interval '0' AND NOT v_debounce THEN
        PERFORM pgq._notify(v_queue);
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
-- Back to a NOTIFY on every dispatch (dispatch_many keeps calling pgq._notify).
CREATE OR REPLACE FUNCTION pgq._notify(queue text) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify('pgq_jobs', _notify.queue);
$$;
-- +goose StatementEnd
DROP FUNCTION pgq.nap(text[], interval);
DROP FUNCTION pgq.wake();
