-- Middleware (S26-S29), evaluated by pgq.reserve before the handler: without_overlapping
-- leases (S34), rate limits, circuit breakers.

-- pgq._check_regex: the "when" of throttles_exceptions is a regular expression matched
-- against exception texts inside pgq.fail, where a slow match would hold up the reports
-- of every job in the batch (S38). It must be a string of at most 512 characters that
-- compiles, without back-references (\1 to \9): PostgreSQL matches other expressions with
-- automata in time bounded by the input, and the input is bounded (pgq.fail matches the
-- first 4,096 characters of the exception), but back-references can take exponential
-- time. Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_regex(p_when jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF jsonb_typeof(p_when) <> 'string' OR length(p_when #>> '{}') > 512 THEN
        RAISE EXCEPTION 'pgq: throttles_exceptions "when" must be a regular expression of at most 512 characters, got %', left(p_when::text, 80)
            USING ERRCODE = '22023';
    END IF;
    IF (p_when #>> '{}') ~ '(^|[^\\])(\\\\)*\\[1-9]' THEN
        RAISE EXCEPTION 'pgq: throttles_exceptions "when" % uses a back-reference, which can take exponential time: match without it', p_when
            USING ERRCODE = '22023';
    END IF;
    PERFORM '' ~ (p_when #>> '{}');
EXCEPTION WHEN invalid_regular_expression THEN
    RAISE EXCEPTION 'pgq: throttles_exceptions "when" is not a valid regular expression: %', p_when #>> '{}'
        USING ERRCODE = '22023';
END;
$$;

COMMENT ON FUNCTION pgq._check_regex(jsonb) IS 'Raises 22023 unless a throttles_exceptions "when" is a valid regular expression of at most 512 characters without back-references (S38).';

-- pgq._check_middleware: middleware is a JSON array of one-key objects, evaluated in
-- order before the handler (S26-S29):
--   {"without_overlapping": {"key": "k" | "by": ["field"], "release_after": 0, "expire_after": 30,
--                            "dont_release": false, "shared": false}}
--   {"rate_limited": {"limit": "name", "by": ["field"]}}
--   {"throttles_exceptions": {"max_exceptions": 10, "decay": 600, "backoff": 0, "key": "k" | "by": [...],
--                             "when": "regex on the exception text"}}
-- Raises 22023 naming the bad entry.
CREATE OR REPLACE FUNCTION pgq._check_middleware(p_middleware jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
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
            PERFORM pgq._check_regex(v_cfg -> 'when');
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._check_middleware(jsonb) IS 'Raises 22023 naming the bad entry of a middleware declaration (S26-S29).';

-- pgq._middleware: the settings of the first middleware of that name, or NULL.
CREATE OR REPLACE FUNCTION pgq._middleware(p_middleware jsonb, p_name text) RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m -> p_name FROM jsonb_array_elements(p_middleware) m WHERE m ? p_name LIMIT 1;
$$;

COMMENT ON FUNCTION pgq._middleware(jsonb, text) IS 'The settings of the first middleware of that name, or NULL.';

-- pgq._middleware_key: the key a middleware counts or locks for a job: a
-- without_overlapping key (scoped to the job name, or to "shared"), a rate limit's key
-- (the limit's name, per by value when given) or a circuit's key (the job name by
-- default). NULL when the payload lacks a field of by. Never raises.
CREATE OR REPLACE FUNCTION pgq._middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgq._key_or_null(
        CASE p_name
            WHEN 'rate_limited' THEN p_cfg ->> 'limit'
            WHEN 'without_overlapping' THEN CASE WHEN (p_cfg ->> 'shared')::boolean THEN 'shared' ELSE p_job END
            ELSE p_job END,
        CASE WHEN p_name <> 'rate_limited' THEN p_cfg ->> 'key' END,
        pgq._texts(p_cfg -> 'by'), p_payload);
$$;

COMMENT ON FUNCTION pgq._middleware_key(text, text, jsonb, jsonb) IS 'The overlap, rate-limit or circuit key a middleware uses for a job; NULL when a by field is missing.';

-- pgq._check_middleware_keys: at dispatch, every key of every middleware must be
-- computable from every payload and no longer than pgq._max_key_bytes(): a key that
-- cannot be stored would otherwise only fail at reserve or report time (S38).
CREATE OR REPLACE FUNCTION pgq._check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgq._key(CASE m.key WHEN 'rate_limited' THEN m.value ->> 'limit' ELSE p_job END, NULL,
                     pgq._texts(m.value -> 'by'), p.payload)
    FROM jsonb_array_elements(p_middleware) mw, jsonb_each(mw) m, unnest(p_payloads) p(payload)
    WHERE pgq._middleware_key(p_job, m.key, m.value, p.payload) IS NULL;
    PERFORM pgq._key(p_job, pgq._middleware_key(p_job, m.key, m.value, p.payload), NULL, p.payload)
    FROM jsonb_array_elements(p_middleware) mw, jsonb_each(mw) m, unnest(p_payloads) p(payload)
    WHERE octet_length(pgq._middleware_key(p_job, m.key, m.value, p.payload)) > pgq._max_key_bytes();
END;
$$;

COMMENT ON FUNCTION pgq._check_middleware_keys(text, jsonb, jsonb[]) IS 'Raises 22023 when a middleware key of a dispatch cannot be computed or is too long (S38).';

-- pgq._circuit_key: a throttles_exceptions circuit's key (S29); NULL when p_cfg is NULL
-- (the job has no circuit breaker).
CREATE OR REPLACE FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_cfg IS NOT NULL THEN pgq._middleware_key(p_job, 'throttles_exceptions', p_cfg, p_payload) END;
$$;

COMMENT ON FUNCTION pgq._circuit_key(text, jsonb, jsonb) IS 'The key of a throttles_exceptions circuit (S29).';

-- pgq._overlap_lock_id: the advisory lock id of an overlap key. A SQL handler's
-- transaction holds it while the handler runs (pgq.run_sql_job); pgq.reserve tests it.
CREATE OR REPLACE FUNCTION pgq._overlap_lock_id(p_key text) RETURNS bigint
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pgq._lock_id('overlap:' || p_key);
$$;

COMMENT ON FUNCTION pgq._overlap_lock_id(text) IS 'The advisory lock id of a without_overlapping key (S26, S34).';

-- pgq._overlap_ttl: how long an overlap lease lasts without a heartbeat (S34). Workers
-- renew the leases of their running jobs every second and cancel a handler whose lease
-- they could not renew for a third of this; a killed worker's keys are free after it.
CREATE OR REPLACE FUNCTION pgq._overlap_ttl() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT interval '10 seconds' $$;

COMMENT ON FUNCTION pgq._overlap_ttl() IS 'How long an overlap lease lasts without a heartbeat: 10 s (S34).';

-- pgq._overlap_until: when an overlap lease taken at p_since and renewed at p_now ends:
-- a TTL from the renewal, never past expire_after seconds from p_since (S27).
CREATE OR REPLACE FUNCTION pgq._overlap_until(p_since timestamptz, p_now timestamptz, p_expire_after int) RETURNS timestamptz
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT least(p_now + pgq._overlap_ttl(), p_since + make_interval(secs => p_expire_after));
$$;

COMMENT ON FUNCTION pgq._overlap_until(timestamptz, timestamptz, int) IS 'The end of an overlap lease renewed at p_now: the TTL, capped by expire_after (S27, S34).';

-- pgq._take_overlap: takes the without_overlapping lease of a key for a reserved job
-- (S26, S34). The lease is a row, not a session lock: it lives while the worker
-- heartbeats the job (pgq.heartbeat renews it) and goes with the attempt's outcome, so a
-- worker whose connection drops keeps it. A key is free when no unexpired lease holds
-- it and no transaction holds its advisory lock: a SQL handler whose lease ended may
-- still run, and its transaction holds that lock (pgq.run_sql_job). The test of the
-- lock lasts until reserve commits. The WHERE may only read the lease row itself (see
-- pgq._take_unique). Returns false when the key is taken.
CREATE OR REPLACE FUNCTION pgq._take_overlap(p_key text, p_job pgq.jobs, p_now timestamptz, p_expire_after int) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pgq.overlap_locks AS o (key, job_uuid, lease_token, worker, since, expires_at, expire_after)
    VALUES (p_key, p_job.uuid, p_job.lease_token, p_job.reserved_by, p_now,
            pgq._overlap_until(p_now, p_now, p_expire_after), p_expire_after)
    ON CONFLICT (key) DO UPDATE
        SET job_uuid = EXCLUDED.job_uuid, lease_token = EXCLUDED.lease_token, worker = EXCLUDED.worker,
            since = EXCLUDED.since, expires_at = EXCLUDED.expires_at, expire_after = EXCLUDED.expire_after
        WHERE o.expires_at <= p_now;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF pg_try_advisory_xact_lock(pgq._overlap_lock_id(p_key)) THEN
        RETURN true;
    END IF;
    DELETE FROM pgq.overlap_locks o WHERE o.key = p_key AND o.job_uuid = p_job.uuid;
    RETURN false;
END;
$$;

COMMENT ON FUNCTION pgq._take_overlap(text, pgq.jobs, timestamptz, int) IS 'Takes the overlap lease of a key for a reserved job; false when an unexpired lease or a running SQL handler holds the key (S26, S34).';

-- pgq._release_overlap: ends the overlap leases that these jobs hold on these keys (the
-- keys of their attempts, jobs.overlap_keys). A lease another job took over after one of
-- theirs expired stays. No-op when p_keys is NULL.
CREATE OR REPLACE FUNCTION pgq._release_overlap(p_uuids uuid[], p_keys text[]) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM pgq.overlap_locks o WHERE o.key = ANY (p_keys) AND o.job_uuid = ANY (p_uuids);
$$;

COMMENT ON FUNCTION pgq._release_overlap(uuid[], text[]) IS 'Ends the overlap leases these jobs hold on these keys; a lease taken over by another job stays (S26, S34).';

-- pgq._admit: runs a reserved job's middleware in order, before its handler (S26-S29).
-- Returns turned_by NULL and the overlap keys now leased to the job when every
-- middleware admits it; otherwise the middleware that turned it away, a note, the delay
-- and whether to drop it (dont_release), having ended any lease an earlier middleware
-- took; or error when a key cannot be computed. Never raises for a job's settings, and
-- opens no subtransaction: dispatch validated them, and a broken job must not stop
-- reserve.
CREATE OR REPLACE FUNCTION pgq._admit(
    p_job pgq.jobs, p_now timestamptz,
    OUT turned_by text, OUT note text, OUT delay int, OUT drop boolean, OUT held text[], OUT error text
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_mw      jsonb;
    v_name    text;
    v_cfg     jsonb;
    v_key     text;
    v_limit   pgq.rate_limits;
    v_window  pgq.rate_limit_windows;
    v_circuit pgq.circuits;
BEGIN
    held := '{}';
    drop := false;
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_job.middleware) m LOOP
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        v_key := pgq._middleware_key(p_job.job, v_name, v_cfg, p_job.payload);
        IF v_key IS NULL THEN
            error := format('middleware could not be evaluated: %s has no key for this payload (by %s)', v_name, v_cfg -> 'by');
            EXIT;
        END IF;
        IF v_name = 'without_overlapping' THEN
            IF pgq._take_overlap(v_key, p_job, p_now, (v_cfg ->> 'expire_after')::int) THEN
                held := held || v_key;
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
            SELECT * INTO v_circuit FROM pgq.circuits c WHERE c.key = v_key;
            CONTINUE WHEN NOT FOUND OR v_circuit.failures < v_circuit.max_exceptions
                       OR v_circuit.window_start + make_interval(secs => v_circuit.decay) <= p_now;
            turned_by := v_name;
            delay := ceil(extract(epoch FROM v_circuit.window_start + make_interval(secs => v_circuit.decay) - p_now))::int + pgq._turn_away_slack();
            note := format('turned away by throttles_exceptions (circuit %s open: %s exceptions within %ss), released for %ss',
                           v_circuit.key, v_circuit.failures, v_circuit.decay, delay);
        END IF;
        EXIT;  -- turned away
    END LOOP;
    IF (turned_by IS NOT NULL OR error IS NOT NULL) AND cardinality(held) > 0 THEN
        PERFORM pgq._release_overlap(ARRAY[p_job.uuid], held);
        held := '{}';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._admit(pgq.jobs, timestamptz) IS 'Runs a reserved job''s middleware in order; returns what turned it away, or the overlap keys leased to it (S26-S29, S34).';
