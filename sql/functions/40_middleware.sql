-- Middleware (S26-S29), evaluated by pgq.reserve before the handler: without_overlapping advisory locks, rate limits, circuit breakers.

-- pgq._check_middleware: middleware is a JSON array of one-key objects, evaluated in
-- order before the handler (S26-S29):
--   {"without_overlapping": {"key": "k" | "by": ["field"], "release_after": 0, "expire_after": 30,
--                            "dont_release": false, "shared": false}}
--   {"rate_limited": {"limit": "name", "by": ["field"]}}
--   {"throttles_exceptions": {"max_exceptions": 10, "decay": 600, "backoff": 0, "key": "k" | "by": [...],
--                             "when": "regex on the exception text"}}
-- Raises 22023 naming the bad entry.
CREATE OR REPLACE FUNCTION pgq._check_middleware(p_middleware jsonb) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_mw   jsonb;
    v_name text;
    v_cfg  jsonb;
    v_bad  text;
BEGIN
    IF p_middleware IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_middleware) <> 'array' THEN
        RAISE EXCEPTION 'pgq: middleware must be a JSON array, got %', p_middleware USING ERRCODE = '22023';
    END IF;
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_middleware) m LOOP
        IF jsonb_typeof(v_mw) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v_mw)) <> 1 THEN
            RAISE EXCEPTION 'pgq: each middleware must be an object with one key, got %', v_mw USING ERRCODE = '22023';
        END IF;
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        IF jsonb_typeof(v_cfg) <> 'object' THEN
            RAISE EXCEPTION 'pgq: settings of % must be an object, got %', v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_cfg) k
        WHERE k <> ALL (CASE v_name
            WHEN 'without_overlapping' THEN ARRAY['key', 'by', 'release_after', 'expire_after', 'dont_release', 'shared']
            WHEN 'rate_limited' THEN ARRAY['limit', 'by']
            WHEN 'throttles_exceptions' THEN ARRAY['max_exceptions', 'decay', 'backoff', 'key', 'by', 'when']
            ELSE NULL END);
        IF v_name NOT IN ('without_overlapping', 'rate_limited', 'throttles_exceptions') THEN
            RAISE EXCEPTION 'pgq: unknown middleware %: use without_overlapping, rate_limited or throttles_exceptions',
                quote_literal(v_name) USING ERRCODE = '22023';
        END IF;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: unknown setting(s) % of %', v_bad, v_name USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND (jsonb_typeof(v_cfg -> 'by') <> 'array' OR jsonb_array_length(v_cfg -> 'by') = 0) THEN
            RAISE EXCEPTION 'pgq: % "by" must be a non-empty array of payload field names, got %', v_name, v_cfg -> 'by'
                USING ERRCODE = '22023';
        END IF;
        IF EXISTS (SELECT FROM jsonb_each(v_cfg) e
                   WHERE e.key IN ('release_after', 'expire_after', 'max_exceptions', 'decay', 'backoff')
                     AND (jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 0 OR (e.value)::numeric % 1 <> 0
                          OR (e.value)::numeric > 2147483647
                          OR (e.key IN ('expire_after', 'max_exceptions', 'decay') AND (e.value)::numeric < 1))) THEN
            RAISE EXCEPTION 'pgq: % has a bad number in %: release_after and backoff are whole seconds >= 0, expire_after, decay and max_exceptions whole numbers >= 1',
                v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'key' AND jsonb_typeof(v_cfg -> 'key') <> 'string' THEN
            RAISE EXCEPTION 'pgq: % "key" must be a string, got %', v_name, v_cfg -> 'key' USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND EXISTS (SELECT FROM jsonb_array_elements(v_cfg -> 'by') f WHERE jsonb_typeof(f) <> 'string') THEN
            RAISE EXCEPTION 'pgq: % "by" must name payload fields as strings, got %', v_name, v_cfg -> 'by' USING ERRCODE = '22023';
        END IF;
        IF v_name = 'rate_limited' AND NOT EXISTS (SELECT FROM pgq.rate_limits l WHERE l.name = v_cfg ->> 'limit') THEN
            RAISE EXCEPTION 'pgq: rate_limited names limit %, which is not defined (pgq.define_limit)',
                coalesce(quote_literal(v_cfg ->> 'limit'), 'NULL') USING ERRCODE = '22023';
        END IF;
        IF v_name = 'throttles_exceptions' AND v_cfg ? 'when' THEN
            BEGIN
                PERFORM '' ~ (v_cfg ->> 'when');
            EXCEPTION WHEN invalid_regular_expression THEN
                RAISE EXCEPTION 'pgq: throttles_exceptions "when" is not a valid regular expression: %', v_cfg ->> 'when'
                    USING ERRCODE = '22023';
            END;
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._check_middleware(jsonb) IS 'Raises 22023 naming the bad entry of a middleware declaration (S26-S29).';

-- pgq._middleware: the settings of the first middleware of that name, or NULL.
CREATE OR REPLACE FUNCTION pgq._middleware(p_middleware jsonb, p_name text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT m -> p_name FROM jsonb_array_elements(p_middleware) m WHERE m ? p_name LIMIT 1;
$$;

COMMENT ON FUNCTION pgq._middleware(jsonb, text) IS 'The settings of the first middleware of that name, or NULL.';

-- pgq._circuit_key: a throttles_exceptions circuit's key: key or by fields, scoped to the
-- job name; the job name by default.
CREATE OR REPLACE FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT pgq._key(p_job, p_cfg ->> 'key', pgq._texts(p_cfg -> 'by'), p_payload);
$$;

COMMENT ON FUNCTION pgq._circuit_key(text, jsonb, jsonb) IS 'The key of a throttles_exceptions circuit (S29).';

-- pgq._overlap_lock_id: the advisory lock id of an overlap key.
CREATE OR REPLACE FUNCTION pgq._overlap_lock_id(p_key text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT pgq._lock_id('overlap:' || p_key);
$$;

COMMENT ON FUNCTION pgq._overlap_lock_id(text) IS 'The advisory lock id of a without_overlapping key (S26).';

-- pgq._lock_held: whether backend p_pid holds the advisory lock p_lock (from pg_locks).
CREATE OR REPLACE FUNCTION pgq._lock_held(p_pid int, p_lock bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.pid = p_pid AND l.granted AND l.objsubid = 1
          AND l.classid::bigint = ((p_lock >> 32) & 4294967295)
          AND l.objid::bigint = (p_lock & 4294967295));
$$;

COMMENT ON FUNCTION pgq._lock_held(int, bigint) IS 'Whether a backend holds a one-key advisory lock, from pg_locks.';

-- pgq._admit: runs a reserved job's middleware in order, before its handler (S26-S29).
-- Returns turned_by NULL and the overlap keys now held by this session when every
-- middleware admits the job; otherwise the middleware that turned it away, a note, the
-- delay and whether to drop it (dont_release), having given back any lock an earlier
-- middleware took. Never raises for a job's settings: a broken job must not stop reserve.
CREATE OR REPLACE FUNCTION pgq._admit(
    p_job pgq.jobs, p_now timestamptz,
    OUT turned_by text, OUT note text, OUT delay int, OUT drop boolean, OUT held text[], OUT error text
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_mw      jsonb;
    v_name    text;
    v_cfg     jsonb;
    v_key     text;
    v_lock    bigint;
    v_limit   pgq.rate_limits;
    v_window  pgq.rate_limit_windows;
    v_circuit pgq.circuits;
BEGIN
    held := '{}';
    drop := false;
    BEGIN
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_job.middleware) m LOOP
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        IF v_name = 'without_overlapping' THEN
            v_key := pgq._key(CASE WHEN (v_cfg ->> 'shared')::boolean THEN 'shared' ELSE p_job.job END,
                              v_cfg ->> 'key', pgq._texts(v_cfg -> 'by'), p_job.payload);
            v_lock := pgq._overlap_lock_id(v_key);
            -- Session advisory locks are re-entrant: without the first test one worker could
            -- run two jobs with the same key. The row this session wrote when it took the
            -- lock says so by primary key; pg_locks (a scan of every lock) only confirms it,
            -- in case the row is stale from a dead backend whose pid was reused.
            IF NOT (EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = v_key AND o.pid = pg_backend_pid())
                    AND pgq._lock_held(pg_backend_pid(), v_lock))
               AND pg_try_advisory_lock(v_lock) THEN
                held := held || v_key;
                INSERT INTO pgq.overlap_locks AS o (key, lock_id, job_uuid, worker, pid, since, expire_after)
                VALUES (v_key, v_lock, p_job.uuid, p_job.reserved_by, pg_backend_pid(), p_now, (v_cfg ->> 'expire_after')::int)
                ON CONFLICT (key) DO UPDATE
                    SET lock_id = EXCLUDED.lock_id, job_uuid = EXCLUDED.job_uuid, worker = EXCLUDED.worker,
                        pid = EXCLUDED.pid, since = EXCLUDED.since, expire_after = EXCLUDED.expire_after;
                CONTINUE;
            END IF;
            turned_by := v_name;
            drop := coalesce((v_cfg ->> 'dont_release')::boolean, false);
            delay := coalesce((v_cfg ->> 'release_after')::int, 0);
            note := format('turned away by without_overlapping (key %s), %s', v_key,
                           CASE WHEN drop THEN 'deleted (dont_release)' ELSE format('released for %ss', delay) END);
        ELSIF v_name = 'rate_limited' THEN
            SELECT * INTO v_limit FROM pgq.rate_limits l WHERE l.name = v_cfg ->> 'limit';
            CONTINUE WHEN NOT FOUND;  -- the limit was dropped after dispatch: no budget to keep
            v_key := pgq._key(v_limit.name, NULL, pgq._texts(v_cfg -> 'by'), p_job.payload);
            -- Fixed window, exact under concurrency: the hit is counted under the row lock
            -- and the WHERE reads only that row.
            INSERT INTO pgq.rate_limit_windows AS w (limit_name, key, window_start, hits)
            VALUES (v_limit.name, v_key, p_now, 1)
            ON CONFLICT (limit_name, key) DO UPDATE
                SET window_start = CASE WHEN w.window_start + v_limit.per <= p_now THEN p_now ELSE w.window_start END,
                    hits = CASE WHEN w.window_start + v_limit.per <= p_now THEN 1 ELSE w.hits + 1 END
                WHERE w.window_start + v_limit.per <= p_now OR w.hits < v_limit.max
            RETURNING * INTO v_window;
            CONTINUE WHEN FOUND;
            SELECT * INTO v_window FROM pgq.rate_limit_windows w WHERE w.limit_name = v_limit.name AND w.key = v_key;
            turned_by := v_name;
            delay := ceil(extract(epoch FROM v_window.window_start + v_limit.per - p_now))::int + pgq._turn_away_slack();
            note := format('turned away by rate_limited (limit %s, key %s: %s per %s used), released for %ss',
                           v_limit.name, v_key, v_window.hits, v_limit.per, delay);
        ELSIF v_name = 'throttles_exceptions' THEN
            SELECT * INTO v_circuit FROM pgq.circuits c WHERE c.key = pgq._circuit_key(p_job.job, p_job.payload, v_cfg);
            CONTINUE WHEN NOT FOUND OR v_circuit.failures < v_circuit.max_exceptions
                       OR v_circuit.window_start + make_interval(secs => v_circuit.decay) <= p_now;
            turned_by := v_name;
            delay := ceil(extract(epoch FROM v_circuit.window_start + make_interval(secs => v_circuit.decay) - p_now))::int + pgq._turn_away_slack();
            note := format('turned away by throttles_exceptions (circuit %s open: %s exceptions within %ss), released for %ss',
                           v_circuit.key, v_circuit.failures, v_circuit.decay, delay);
        END IF;
        EXIT;  -- turned away
    END LOOP;
    EXCEPTION WHEN OTHERS THEN
        -- Dispatch validates middleware, so this is a job that cannot be admitted at all
        -- (a class changed under it, a limit dropped mid-call...). It must not stop the
        -- queue: give back the locks this call took (session advisory locks survive the
        -- rollback of this block) and fail this job alone.
        PERFORM pg_advisory_unlock(pgq._overlap_lock_id(k)) FROM unnest(held) k;
        held := '{}';
        turned_by := NULL;
        error := format('middleware could not be evaluated: %s (SQLSTATE %s)', SQLERRM, SQLSTATE);
        RETURN;
    END;
    IF turned_by IS NOT NULL AND cardinality(held) > 0 THEN
        PERFORM pgq.unlock_overlap(p_job.uuid, held);
        held := '{}';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._admit(pgq.jobs, timestamptz) IS 'Runs a reserved job''s middleware in order; returns what turned it away, or the overlap keys it now holds (S26-S29).';

-- pgq.unlock_overlap_many: pgq.unlock_overlap for many jobs at once. The locks are given
-- as pairs, uuids[i] holding keys[i] (a job with two keys comes twice). Each goes only if
-- that job still owns it on this session (after expire_after freed a job's lock, another
-- job may hold the key now). Returns how many advisory locks were released.
CREATE OR REPLACE FUNCTION pgq.unlock_overlap_many(uuids uuid[], keys text[]) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count int;
BEGIN
    IF cardinality(unlock_overlap_many.uuids) IS DISTINCT FROM cardinality(unlock_overlap_many.keys) THEN
        RAISE EXCEPTION 'pgq: unlock_overlap_many needs one key per uuid, got % uuids and % keys',
            cardinality(unlock_overlap_many.uuids), cardinality(unlock_overlap_many.keys) USING ERRCODE = '22023';
    END IF;
    WITH gone AS (
        DELETE FROM pgq.overlap_locks o
        USING unnest(unlock_overlap_many.uuids, unlock_overlap_many.keys) AS l(uuid, key)
        WHERE o.key = l.key AND o.job_uuid = l.uuid AND o.pid = pg_backend_pid()
        RETURNING o.key
    )
    SELECT count(*) FILTER (WHERE pg_advisory_unlock(pgq._overlap_lock_id(g.key)))::int INTO v_count
    FROM gone g;
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION pgq.unlock_overlap_many(uuid[], text[]) IS
    'Worker protocol: pgq.unlock_overlap for a batch of finished jobs, as (uuids[i], keys[i]) pairs, on the session that reserved them (S26).';

-- pgq.unlock_overlap: one job's locks, now through unlock_overlap_many, so the owner and
-- session checks are written once.
CREATE OR REPLACE FUNCTION pgq.unlock_overlap(uuid uuid, keys text[]) RETURNS int
LANGUAGE sql VOLATILE AS $$
    SELECT pgq.unlock_overlap_many(
        array_fill(unlock_overlap.uuid, ARRAY[cardinality(coalesce(unlock_overlap.keys, '{}'))]),
        coalesce(unlock_overlap.keys, '{}'));
$$;

COMMENT ON FUNCTION pgq.unlock_overlap(uuid, text[]) IS
    'Worker protocol: releases the without_overlapping advisory locks a job held, on the session that reserved it (S26).';

-- pgq.expire_overlap: releases the overlap locks this session has held longer than their
-- expire_after (S27: expire_after caps how long one holder keeps the lock, even while its
-- handler still runs). Call it on the worker's session now and then; returns the keys.
CREATE OR REPLACE FUNCTION pgq.expire_overlap() RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_lock pgq.overlap_locks;
BEGIN
    FOR v_lock IN
        SELECT * FROM pgq.overlap_locks o
        WHERE o.pid = pg_backend_pid()
          AND o.since + make_interval(secs => o.expire_after) <= now()
    LOOP
        PERFORM pgq.unlock_overlap(v_lock.job_uuid, ARRAY[v_lock.key]);
        RETURN NEXT v_lock.key;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq.expire_overlap() IS
    'Worker protocol: releases this session''s overlap locks held past their expire_after; returns their keys.';
