-- Middleware (S26-S29) as declared: the checks of a declaration, the keys each
-- middleware uses, their advisory lock ids and the lease times of without_overlapping
-- (S34). pgq.reserve evaluates it before the handler (42_admission.sql).

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

-- pgq._middleware_bounds: how much middleware one job may carry (S98): entries, payload
-- fields per "by", and bytes of all its keys together. Admission runs a job's middleware
-- one entry at a time for the whole reserve batch, so a job's share of a reserve call
-- grows with these; they are far above what a job class needs.
CREATE OR REPLACE FUNCTION pgq._middleware_bounds(OUT entries int, OUT by_fields int, OUT key_bytes int)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    entries := 8;
    by_fields := 8;
    key_bytes := 4000;
END;
$$;

COMMENT ON FUNCTION pgq._middleware_bounds() IS 'The most middleware a job may carry: 8 entries, 8 "by" fields each, 4,000 bytes of keys (S98).';

-- pgq._check_concurrency: the "limit" of concurrency_limited is a whole number of
-- handlers per key, 1 to 1,000, or the name of a limit pgq.define_concurrency defined
-- (S99). Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_concurrency(p_cfg jsonb) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF jsonb_typeof(p_cfg -> 'limit') = 'number' AND (p_cfg ->> 'limit')::numeric BETWEEN 1 AND 1000
       AND (p_cfg ->> 'limit')::numeric % 1 = 0 THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_cfg -> 'limit') = 'string' THEN
        IF NOT EXISTS (SELECT FROM pgq.concurrency_limits l WHERE l.name = p_cfg ->> 'limit') THEN
            RAISE EXCEPTION 'pgq: concurrency_limited names limit %, which is not defined (pgq.define_concurrency)',
                quote_literal(p_cfg ->> 'limit') USING ERRCODE = '22023';
        END IF;
        IF p_cfg ? 'key' THEN
            RAISE EXCEPTION 'pgq: concurrency_limited with a named limit takes "by", not "key": the limit''s name is its key'
                USING ERRCODE = '22023';
        END IF;
        RETURN;
    END IF;
    RAISE EXCEPTION 'pgq: concurrency_limited "limit" must be a whole number from 1 to 1000 or the name of a pgq.define_concurrency limit, got %',
        coalesce(left((p_cfg -> 'limit')::text, 100), 'nothing') USING ERRCODE = '22023';
END;
$$;

COMMENT ON FUNCTION pgq._check_concurrency(jsonb) IS 'Raises 22023 unless a concurrency_limited "limit" is 1-1000 handlers or a defined limit''s name (S99).';

-- pgq._check_middleware: middleware is a JSON array of one-key objects, evaluated in
-- order before the handler (S26-S29):
--   {"without_overlapping": {"key": "k" | "by": ["field"], "release_after": 0, "expire_after": 30,
--                            "dont_release": false, "shared": false}}
--   {"rate_limited": {"limit": "name", "by": ["field"]}}
--   {"throttles_exceptions": {"max_exceptions": 10, "decay": 600, "backoff": 0, "key": "k" | "by": [...],
--                             "when": "regex on the exception text"}}
--   {"concurrency_limited": {"limit": 5 | "name", "key": "k" | "by": [...]}}
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
        RAISE EXCEPTION 'pgq: middleware must be a JSON array, got %', left(p_middleware::text, 200) USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_middleware) > (pgq._middleware_bounds()).entries THEN
        RAISE EXCEPTION 'pgq: a job may carry at most % middleware entries, got %',
            (pgq._middleware_bounds()).entries, jsonb_array_length(p_middleware) USING ERRCODE = '22023';
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
            WHEN 'concurrency_limited' THEN ARRAY['limit', 'key', 'by']
            ELSE NULL END);
        IF v_name NOT IN ('without_overlapping', 'rate_limited', 'throttles_exceptions', 'concurrency_limited') THEN
            RAISE EXCEPTION 'pgq: unknown middleware %: use without_overlapping, rate_limited, throttles_exceptions or concurrency_limited',
                quote_literal(v_name) USING ERRCODE = '22023';
        END IF;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: unknown setting(s) % of %', v_bad, v_name USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND (jsonb_typeof(v_cfg -> 'by') <> 'array' OR jsonb_array_length(v_cfg -> 'by') = 0
                             OR jsonb_array_length(v_cfg -> 'by') > (pgq._middleware_bounds()).by_fields) THEN
            RAISE EXCEPTION 'pgq: % "by" must be an array of 1 to % payload field names, got %',
                v_name, (pgq._middleware_bounds()).by_fields, left((v_cfg -> 'by')::text, 200) USING ERRCODE = '22023';
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
        IF v_name = 'concurrency_limited' THEN
            PERFORM pgq._check_concurrency(v_cfg);
        END IF;
        IF v_name = 'throttles_exceptions' AND v_cfg ? 'when' THEN
            PERFORM pgq._check_regex(v_cfg -> 'when');
        END IF;
    END LOOP;
    -- Two concurrency_limited entries that count one key (one named limit, or the
    -- class's own, by the same key or fields) would each find the other's place taken,
    -- and their job would wait for ever (S99).
    SELECT string_agg(c.entry::text, ' and ') INTO v_bad
    FROM (SELECT m -> 'concurrency_limited' AS entry,
                 count(*) OVER (PARTITION BY CASE jsonb_typeof(m #> '{concurrency_limited,limit}')
                                                  WHEN 'string' THEN m #>> '{concurrency_limited,limit}' END,
                                             m #> '{concurrency_limited,key}', m #> '{concurrency_limited,by}') AS n
          FROM jsonb_array_elements(p_middleware) m
          WHERE m ? 'concurrency_limited') c
    WHERE c.n > 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: concurrency_limited entries % count the same key: give one entry for it', v_bad
            USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_middleware(jsonb) IS 'Raises 22023 naming the bad entry of a middleware declaration (S26-S29).';

-- pgq._middleware: the settings of the first middleware of that name, or NULL.
CREATE OR REPLACE FUNCTION pgq._middleware(p_middleware jsonb, p_name text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT m -> p_name FROM jsonb_array_elements(p_middleware) m WHERE m ? p_name LIMIT 1);
END;
$$;

COMMENT ON FUNCTION pgq._middleware(jsonb, text) IS 'The settings of the first middleware of that name, or NULL.';

-- pgq._middleware_keys: the key a middleware counts or locks for each job, one per
-- element of the arrays (which have one length): a without_overlapping key (scoped to
-- the job name, or to "shared"), a rate limit's key (the limit's name, per by value when
-- given), a concurrency_limited key (the job name, or '@' and the name of the limit it
-- names: no job name starts with '@', so a class's own limit and a named limit never
-- share places, S99) or a circuit's key (the job name by default). NULL where the
-- payload lacks a field of by. Never raises; one call for a batch (see
-- pgq._keys_or_null).
CREATE OR REPLACE FUNCTION pgq._middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT pgq._keys_or_null(
        array_agg(CASE u.name
                      WHEN 'rate_limited' THEN u.cfg ->> 'limit'
                      WHEN 'concurrency_limited' THEN CASE jsonb_typeof(u.cfg -> 'limit') WHEN 'string' THEN '@' || (u.cfg ->> 'limit') ELSE u.job END
                      WHEN 'without_overlapping' THEN CASE WHEN (u.cfg ->> 'shared')::boolean THEN 'shared' ELSE u.job END
                      ELSE u.job END ORDER BY u.n),
        array_agg(CASE WHEN u.name <> 'rate_limited' THEN u.cfg ->> 'key' END ORDER BY u.n),
        array_agg(u.cfg -> 'by' ORDER BY u.n),
        array_agg(u.payload ORDER BY u.n))
    FROM unnest(p_jobs, p_names, p_cfgs, p_payloads) WITH ORDINALITY AS u(job, name, cfg, payload, n));
END;
$$;

COMMENT ON FUNCTION pgq._middleware_keys(text[], text[], jsonb[], jsonb[]) IS 'The overlap, rate-limit or circuit key a middleware uses for each job of a batch; NULL where a by field is missing.';

-- pgq._middleware_key: pgq._middleware_keys for one job.
CREATE OR REPLACE FUNCTION pgq._middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (pgq._middleware_keys(ARRAY[p_job], ARRAY[p_name], ARRAY[p_cfg], ARRAY[p_payload]))[1];
END;
$$;

COMMENT ON FUNCTION pgq._middleware_key(text, text, jsonb, jsonb) IS 'The overlap, rate-limit or circuit key a middleware uses for a job; NULL when a by field is missing.';

-- pgq._check_middleware_keys: at dispatch, every key of every middleware must be
-- computable from every payload and no longer than pgq._max_key_bytes(): a key that
-- cannot be stored would otherwise only fail at reserve or report time (S38). The keys
-- of the whole batch are computed in one call; pgq._key then raises for the first bad
-- one (middleware in order, then payloads in order). Returns them, one JSON array of
-- strings per payload (jobs.middleware_keys), in payload order.
CREATE OR REPLACE FUNCTION pgq._check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]) RETURNS jsonb[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan  -- as pgq._uuid7s: a dispatch of one job planned each statement again
AS $$
DECLARE
    v_names    text[];
    v_cfgs     jsonb[];
    v_payloads jsonb[];
    v_keys     text[];
    v_max      int := pgq._max_key_bytes();
    v_m        int := jsonb_array_length(p_middleware);
    v_over     int;                   -- the first payload whose keys take too many bytes, and their bytes
    v_bytes    bigint;
BEGIN
    -- payload-major: element (p - 1) * v_m + m is middleware m of payload p
    SELECT array_agg(m.key ORDER BY p.n, mw.n), array_agg(m.value ORDER BY p.n, mw.n), array_agg(p.payload ORDER BY p.n, mw.n)
    INTO v_names, v_cfgs, v_payloads
    FROM jsonb_array_elements(p_middleware) WITH ORDINALITY mw(m, n), jsonb_each(mw.m) m,
         unnest(p_payloads) WITH ORDINALITY p(payload, n);
    IF v_names IS NULL THEN
        RETURN array_fill(NULL::jsonb, ARRAY[coalesce(cardinality(p_payloads), 0)]);
    END IF;
    v_keys := pgq._middleware_keys(array_fill(p_job, ARRAY[cardinality(v_names)]), v_names, v_cfgs, v_payloads);
    PERFORM pgq._key(CASE WHEN v_names[i] = 'rate_limited' OR jsonb_typeof(v_cfgs[i] -> 'limit') = 'string'
                          THEN v_cfgs[i] ->> 'limit' ELSE p_job END, NULL,
                     pgq._texts(v_cfgs[i] -> 'by'), v_payloads[i])
    FROM generate_subscripts(v_keys, 1) i
    WHERE v_keys[i] IS NULL
    ORDER BY (i - 1) % v_m, i;
    PERFORM pgq._key(p_job, v_keys[i], NULL, v_payloads[i])
    FROM generate_subscripts(v_keys, 1) i
    WHERE octet_length(v_keys[i]) > v_max
    ORDER BY (i - 1) % v_m, i;
    SELECT (i - 1) / v_m + 1, sum(octet_length(v_keys[i])) INTO v_over, v_bytes
    FROM generate_subscripts(v_keys, 1) i
    GROUP BY (i - 1) / v_m
    HAVING sum(octet_length(v_keys[i])) > (pgq._middleware_bounds()).key_bytes
    ORDER BY 1
    LIMIT 1;
    IF v_over IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: the middleware keys of % (payload %) take % bytes, more than the % a job may carry',
            p_job, v_over, v_bytes, (pgq._middleware_bounds()).key_bytes
            USING ERRCODE = '22023', HINT = 'Key jobs by an id, not by a large payload field.';
    END IF;
    RETURN ARRAY(SELECT to_jsonb(v_keys[(p - 1) * v_m + 1 : p * v_m]) FROM generate_series(1, cardinality(p_payloads)) p ORDER BY p);
END;
$$;

COMMENT ON FUNCTION pgq._check_middleware_keys(text, jsonb, jsonb[]) IS 'Raises 22023 when a middleware key of a dispatch cannot be computed or is too long (S38); returns the keys, a JSON array per payload.';

-- pgq._circuit_key: a throttles_exceptions circuit's key (S29); NULL when p_cfg is NULL
-- (the job has no circuit breaker).
CREATE OR REPLACE FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN CASE WHEN p_cfg IS NOT NULL THEN pgq._middleware_key(p_job, 'throttles_exceptions', p_cfg, p_payload) END;
END;
$$;

COMMENT ON FUNCTION pgq._circuit_key(text, jsonb, jsonb) IS 'The key of a throttles_exceptions circuit (S29).';

-- pgq._overlap_lock_id: the advisory lock id of an overlap key. A SQL handler's
-- transaction holds it while the handler runs (pgq.run_sql_job); pgq.reserve tests it.
CREATE OR REPLACE FUNCTION pgq._overlap_lock_id(p_key text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pgq._lock_id('overlap:' || p_key);
END;
$$;

COMMENT ON FUNCTION pgq._overlap_lock_id(text) IS 'The advisory lock id of a without_overlapping key (S26, S34).';

-- pgq._overlap_lock_ids: pgq._overlap_lock_id of each key, in one call (pgq._admit).
CREATE OR REPLACE FUNCTION pgq._overlap_lock_ids(p_keys text[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'overlap:' || k FROM unnest(p_keys) WITH ORDINALITY u(k, n) ORDER BY u.n));
END;
$$;

COMMENT ON FUNCTION pgq._overlap_lock_ids(text[]) IS 'The advisory lock ids of without_overlapping keys, in one call (S26, S34).';

-- pgq._window_lock_ids: the advisory lock ids of rate-limit windows (limit, key), one per
-- pair (S82). A window row is written only by the holder of its lock: pgq._admit, and
-- pgq.prune_all deleting it.
CREATE OR REPLACE FUNCTION pgq._window_lock_ids(p_limits text[], p_keys text[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'window:' || jsonb_build_array(u.limit_name, u.key)::text
                               FROM unnest(p_limits, p_keys) WITH ORDINALITY u(limit_name, key, n) ORDER BY u.n));
END;
$$;

COMMENT ON FUNCTION pgq._window_lock_ids(text[], text[]) IS 'The advisory lock ids of rate-limit windows, one per (limit, key) (S28, S82).';

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
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN least(p_now + pgq._overlap_ttl(), p_since + make_interval(secs => p_expire_after));
END;
$$;

COMMENT ON FUNCTION pgq._overlap_until(timestamptz, timestamptz, int) IS 'The end of an overlap lease renewed at p_now: the TTL, capped by expire_after (S27, S34).';

