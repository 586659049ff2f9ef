-- Admission: the middleware of a reserve batch evaluated before the handlers run
-- (S26-S29): without_overlapping leases (S34, S81), rate limits (S82), circuit breakers.

-- pgq._admit_unbounded: the jobs of a batch carrying more middleware than a dispatch
-- may (stored before the bound held, or from a class defined then), failed: they fail
-- alone, so that none lengthens a reserve call for the batch's other jobs (S98).
CREATE OR REPLACE FUNCTION pgq._admit_unbounded(p_middleware jsonb[]) RETURNS pgq.admission[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_max int := (pgq._middleware_bounds()).entries;
BEGIN
    RETURN (SELECT coalesce(array_agg(ROW(u.ord, NULL, NULL, NULL, false, NULL,
                                          format('middleware could not be evaluated: %s entries, more than the %s a job may carry',
                                                 jsonb_array_length(u.m), v_max),
                                          NULL, NULL)::pgq.admission), '{}')
            FROM unnest(p_middleware) WITH ORDINALITY u(m, ord)
            WHERE jsonb_array_length(u.m) > v_max);  -- plan kept (see pgq.dispatch)
END;
$$;

COMMENT ON FUNCTION pgq._admit_unbounded(jsonb[]) IS 'The jobs of a reserve batch whose middleware is past the bound of a dispatch, failed (S98).';

-- pgq._admit_missing_keys: the keys of one position of a batch's middleware that
-- dispatch did not store (older jobs, re-queued jobs), computed; a job whose key cannot
-- be computed fails (a key dispatch stored is never NULL). p_ord: the jobs' places in
-- the batch, with the name, settings and stored key of their middleware there.
CREATE OR REPLACE FUNCTION pgq._admit_missing_keys(
    p_ord int[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[],
    OUT keys text[], OUT failed pgq.admission[]
)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT array_agg(coalesce(s.key, c.key) ORDER BY s.n) INTO keys
    FROM unnest(p_key) WITH ORDINALITY s(key, n)
    JOIN unnest(pgq._middleware_keys(ARRAY(SELECT p_jobs[o] FROM unnest(p_ord) WITH ORDINALITY u(o, n) ORDER BY u.n),
                                     p_name, p_cfg,
                                     ARRAY(SELECT p_payloads[o] FROM unnest(p_ord) WITH ORDINALITY u(o, n) ORDER BY u.n)))
         WITH ORDINALITY c(key, n) ON c.n = s.n;
    failed := ARRAY(
        SELECT ROW(s.ord, NULL, NULL, NULL, false, NULL,
                   format('middleware could not be evaluated: %s has no key for this payload (by %s)', s.name, s.cfg -> 'by'),
                   NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_cfg, keys) s(ord, name, cfg, key)
        WHERE s.key IS NULL);
END;
$$;

COMMENT ON FUNCTION pgq._admit_missing_keys(int[], text[], jsonb[], text[], text[], jsonb[]) IS 'The middleware keys of one position of a reserve batch that dispatch did not store, computed; the jobs that have none, failed.';

-- pgq._admit: runs the middleware of a batch of jobs being reserved, before their
-- handlers (S26-S29), set-based: for each position in the middleware lists, one
-- statement per middleware kind decides every job still in, in batch order. The batch
-- is given as arrays, one element per job in pick order: job names, payloads,
-- middleware, their keys as dispatch stored them (jobs.middleware_keys; computed here
-- where NULL, or a named concurrency limit's without its '@', S99), uuids and the lease
-- tokens the jobs will get; p_worker is the worker.
-- Returns one pgq.admission per job (ord = its position in the arrays): turned_by NULL and
-- the overlap keys now leased to it when every middleware admits it (with the largest
-- of their expire_after when each has one: how long the leases can last, S34); otherwise
-- the middleware that turned it away, a note, the delay and whether to drop it
-- (dont_release), having ended any lease an earlier middleware took; or busy, with
-- rate_limited and a note, when the job's window is locked by another transaction and
-- the job must be left waiting, untouched (S82), or with concurrency_limited when its
-- named limit or key is (S99); or error when a key cannot be
-- computed. Never raises for a job's settings and opens no subtransaction (S67):
-- dispatch validated them, and a broken job must not stop reserve.
-- Within one batch, a key is offered to the first job (in batch order) that reaches it
-- at a position; a rate limit's budget goes to its jobs in batch order, and its window
-- row is written once per call, not once per job.
-- The passes of one pgq.reserve call (and its one-by-one jobs) meet keys in no common
-- order, so no lock is waited for once one is held: overlap keys are taken behind
-- advisory locks tried without waiting, and rate-limit windows are waited for only by
-- the first call of a transaction that needs any, in (limit, key) order (S82); a later
-- call leaves the jobs of a window another transaction holds waiting (busy); the locks
-- of concurrency limits and keys are tried without waiting (busy when taken, S99).
-- The joins here are of a batch's arrays with each other and with small keyed tables;
-- as nested loops (pgq.reserve's callers turn hash and merge joins off for pgq.jobs,
-- S78) they would cost n². The same for pgq._release_overlap.
CREATE OR REPLACE FUNCTION pgq._admit(
    p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[],
    p_worker text, p_now timestamptz
)
RETURNS SETOF pgq.admission
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- see above
AS $$
DECLARE
    v_n     int := coalesce(cardinality(p_jobs), 0);
    v_steps int;
    v_alive boolean[] := array_fill(true, ARRAY[v_n]);     -- per job: not turned away or failed yet
    v_held  text[] := array_fill(NULL::text, ARRAY[v_n]);  -- per job: overlap keys leased so far (a text[] as text)
    v_exp   int[] := array_fill(NULL::int, ARRAY[v_n]);    -- per job: the largest expire_after of its leases so far, -1 once one has none
    v_out   pgq.admission[] := pgq._admit_unbounded(p_middleware);  -- the jobs turned away, failed or left waiting
    v_dec   pgq.admission[];            -- decided at this position
    v_ord   int[];                      -- this position's middleware of each job still in: place, name, settings, key
    v_name  text[];
    v_cfg   jsonb[];
    v_key   text[];
    v_missing boolean;                  -- a key of this position was not stored at dispatch
    v_ov    record;                     -- the leases without_overlapping or concurrency_limited won:
    v_w_ord int[]; v_w_key text[]; v_w_exp int[];  -- place, key, expire_after
    v_kind  text;
    v_max   int := (pgq._middleware_bounds()).entries;
BEGIN
    FOR i IN 1 .. cardinality(v_out) LOOP
        v_alive[v_out[i].ord] := false;
    END LOOP;
    SELECT max(jsonb_array_length(m)) INTO v_steps FROM unnest(p_middleware) m
    WHERE jsonb_array_length(m) <= v_max;
    FOR v_pos IN 0 .. coalesce(v_steps, 0) - 1 LOOP
        -- (aggregates over a sorted subquery keep its order: one sort instead of five)
        SELECT array_agg(s.ord), array_agg(s.name), array_agg(s.cfg), array_agg(s.key), bool_or(s.key IS NULL)
        INTO v_ord, v_name, v_cfg, v_key, v_missing
        FROM (SELECT j.ord::int, m.key AS name, m.value AS cfg,
                     CASE WHEN m.key = 'concurrency_limited' AND jsonb_typeof(m.value -> 'limit') = 'string'
                               AND NOT starts_with(j.keys ->> v_pos, '@') THEN NULL  -- stored by an earlier release
                          ELSE j.keys ->> v_pos END AS key
              FROM unnest(p_middleware, p_keys) WITH ORDINALITY AS j(middleware, keys, ord),
                   jsonb_each(j.middleware -> v_pos) m
              WHERE v_alive[j.ord]
              ORDER BY j.ord) s;
        EXIT WHEN v_ord IS NULL;
        v_dec := '{}';
        IF v_missing THEN
            SELECT m.keys, m.failed INTO v_key, v_dec
            FROM pgq._admit_missing_keys(v_ord, v_name, v_cfg, v_key, p_jobs, p_payloads) m;
        END IF;
        -- The kinds that lease keys: without_overlapping, and concurrency_limited's places.
        FOREACH v_kind IN ARRAY ARRAY['without_overlapping', 'concurrency_limited'] LOOP
            CONTINUE WHEN v_kind <> ALL (v_name);
            IF v_kind = 'without_overlapping' THEN
                v_ov := pgq._admit_overlap(v_ord, v_name, v_cfg, v_key, p_uuids, p_tokens, p_worker, p_now);
            ELSE
                v_ov := pgq._admit_concurrency(v_ord, v_name, v_cfg, v_key, p_uuids, p_tokens, p_worker, p_now);
            END IF;
            v_dec := v_dec || v_ov.turned;
            -- O(1) element assignments in local arrays (a record's array field is walked).
            v_w_ord := v_ov.won_ord;
            v_w_key := v_ov.won_key;
            v_w_exp := v_ov.won_exp;
            FOR i IN 1 .. coalesce(cardinality(v_w_ord), 0) LOOP
                v_held[v_w_ord[i]] := CASE WHEN v_held[v_w_ord[i]] IS NULL THEN ARRAY[v_w_key[i]]
                                           ELSE v_held[v_w_ord[i]]::text[] || v_w_key[i] END::text;
                v_exp[v_w_ord[i]] := CASE WHEN v_w_exp[i] < 0 OR v_exp[v_w_ord[i]] < 0 THEN -1
                                          ELSE greatest(v_exp[v_w_ord[i]], v_w_exp[i]) END;
            END LOOP;
        END LOOP;
        IF 'rate_limited' = ANY (v_name) THEN
            v_dec := v_dec || pgq._admit_rate(v_ord, v_name, v_cfg, v_key, p_now);
        END IF;
        IF 'throttles_exceptions' = ANY (v_name) THEN
            v_dec := v_dec || pgq._admit_circuit(v_ord, v_name, v_key, p_now);
        END IF;
        IF cardinality(v_dec) > 0 THEN
            v_out := v_out || v_dec;
            FOR i IN 1 .. cardinality(v_dec) LOOP
                v_alive[v_dec[i].ord] := false;
            END LOOP;
        END IF;
    END LOOP;
    -- Jobs turned away, failed or left waiting give back the leases earlier ones took,
    -- as an end does (a place given back wakes a job waiting for one, S99).
    IF EXISTS (SELECT FROM unnest(v_out) d WHERE v_held[d.ord] IS NOT NULL) THEN
        PERFORM pgq._release_overlap(ARRAY(SELECT p_uuids[d.ord] FROM unnest(v_out) d WHERE v_held[d.ord] IS NOT NULL),
                                     ARRAY(SELECT DISTINCT k FROM unnest(v_out) d, unnest(v_held[d.ord]::text[]) k
                                           WHERE v_held[d.ord] IS NOT NULL));
    END IF;
    -- unnest, not a subscript per row: v_held[a.ord] and v_exp[a.ord] would read the
    -- arrays from their start for each job.
    RETURN QUERY
    SELECT coalesce(d.ord, a.ord::int), d.turned_by, d.note, d.delay, coalesce(d.drop, false),
           CASE WHEN d.ord IS NULL THEN coalesce(a.held::text[], '{}') ELSE coalesce(d.held, '{}') END, d.error,
           CASE WHEN d.ord IS NULL AND a.expire_after >= 0 THEN a.expire_after END, coalesce(d.busy, false)
    FROM unnest(v_held, v_exp) WITH ORDINALITY a(held, expire_after, ord)
    LEFT JOIN unnest(v_out) d ON d.ord = a.ord
    ORDER BY a.ord;
END;
$$;

COMMENT ON FUNCTION pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz) IS 'Runs the middleware of a reserve batch set-based, with no subtransaction; returns per job what turned it away, or the overlap keys leased to it, or that it is left waiting (S26-S29, S34, S67, S82).';

-- pgq._admit_overlap: without_overlapping (S26, S34, S81) for one position of the
-- middleware lists of a batch (p_ord: the jobs' places in the batch, with the name,
-- settings and key of their middleware there; p_uuids and p_tokens by place). The
-- first job of the batch at each key takes the lease when no unexpired lease holds it
-- and no other transaction holds the key's advisory lock (a SQL handler still running,
-- another reserve taking it). Returns the leases won (place, key, expire_after or -1)
-- and the jobs turned away.
CREATE OR REPLACE FUNCTION pgq._admit_overlap(
    p_ord int[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamptz,
    OUT turned pgq.admission[], OUT won_ord int[], OUT won_key text[], OUT won_exp int[]
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- joins of the batch's arrays: see pgq._admit
AS $$
DECLARE
    v_f_ord   int[];                    -- the first job at each overlap key: place, key, expire_after
    v_f_key   text[];
    v_f_exp   int[];
    v_gen     smallint;                 -- the current generation of pgq.overlap_locks (S81)
    v_t_ord   int[];                    -- the first jobs at the keys no live lease holds, whose advisory lock this call got
    v_t_key   text[];
    v_t_exp   int[];
    v_live    boolean;                  -- a live lease holds one of those keys
    v_won     boolean[];                -- per place: took its lease
    v_until   timestamptz := pgq._overlap_until(p_now, p_now, NULL);  -- a new lease's end without expire_after
BEGIN
    -- The first job at each key, in key order by bytes (any fixed order does, and
    -- strcoll costs more than memcmp).
    SELECT array_agg(f.ord), array_agg(f.key), array_agg(f.expire_after)
    INTO v_f_ord, v_f_key, v_f_exp
    FROM (SELECT DISTINCT ON (s.key COLLATE "C") s.ord, s.key, (s.cfg ->> 'expire_after')::int AS expire_after
          FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
          WHERE s.name = 'without_overlapping' AND s.key IS NOT NULL
          ORDER BY s.key COLLATE "C", s.ord) f;
    -- The lock on every generation (ROW SHARE: only a truncation waits for it) keeps
    -- the current one current until this transaction ends (S81).
    LOCK TABLE pgq.overlap_locks IN ROW SHARE MODE;
    v_gen := pgq._overlap_gen();
    -- A key is taken when a live lease holds it, in whichever generation. Each other key
    -- is tried behind its advisory lock, without waiting: a key whose lock another
    -- transaction holds (a SQL handler still running after its lease ran out, another
    -- reserve taking it now) is taken too. So a reserve never waits for another over a
    -- key, and two cannot deadlock on keys they meet in different orders. Whether any
    -- key has a live lease is asked first, in one scan: most often none has. (Planned
    -- per call: for a batch of unknown size the per-key probe's generic plan hashes
    -- every lease of every generation.)
    v_live := EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = ANY (v_f_key) AND o.expires_at > p_now);
    SELECT array_agg(f.ord), array_agg(f.key), array_agg(f.expire_after)
    INTO v_t_ord, v_t_key, v_t_exp
    FROM unnest(v_f_ord, v_f_key, v_f_exp, pgq._overlap_lock_ids(v_f_key)) f(ord, key, expire_after, lock_id)
    WHERE CASE WHEN v_live AND EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = f.key AND o.expires_at > p_now)
               THEN false ELSE pg_try_advisory_xact_lock(f.lock_id) END;
    -- The keys tried go to the current generation, or take over its expired lease (a
    -- lease a late heartbeat renewed stays its job's). When the generation has no row
    -- at any of them, a plain insert, cheaper than the upsert: asked after the advisory
    -- locks, so that under READ COMMITTED it sees every row committed at those keys (a
    -- later one could only come from a holder of a key's lock). An older snapshot
    -- (REPEATABLE READ) takes the upsert, which knows conflicts.
    IF v_t_key IS NOT NULL
       AND current_setting('transaction_isolation') = 'read committed'
       AND NOT EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.gen = v_gen AND o.key = ANY (v_t_key)) THEN
        INSERT INTO pgq.overlap_locks (key, job_uuid, lease_token, worker, since, expires_at, expire_after, gen)
        SELECT f.key, p_uuids[f.ord], p_tokens[f.ord], p_worker, p_now,
               CASE WHEN f.expire_after IS NULL THEN v_until ELSE pgq._overlap_until(p_now, p_now, f.expire_after) END,
               f.expire_after, v_gen
        FROM unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after);  -- in key order already
        won_ord := v_t_ord;
        won_key := v_t_key;
        won_exp := ARRAY(SELECT coalesce(e, -1) FROM unnest(v_t_exp) WITH ORDINALITY x(e, n) ORDER BY x.n);
    ELSE
        WITH taken AS (
            INSERT INTO pgq.overlap_locks AS o (key, job_uuid, lease_token, worker, since, expires_at, expire_after, gen)
            SELECT f.key, p_uuids[f.ord], p_tokens[f.ord], p_worker, p_now,
                   CASE WHEN f.expire_after IS NULL THEN v_until ELSE pgq._overlap_until(p_now, p_now, f.expire_after) END,
                   f.expire_after, v_gen
            FROM unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after)
            ORDER BY f.key
            ON CONFLICT (key, gen) DO UPDATE
                SET job_uuid = EXCLUDED.job_uuid, lease_token = EXCLUDED.lease_token, worker = EXCLUDED.worker,
                    since = EXCLUDED.since, expires_at = EXCLUDED.expires_at, expire_after = EXCLUDED.expire_after
                WHERE o.expires_at <= p_now
            RETURNING o.key
        )
        SELECT array_agg(f.ord), array_agg(f.key), array_agg(coalesce(f.expire_after, -1))
        INTO won_ord, won_key, won_exp
        FROM taken t
        JOIN unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after) ON f.key = t.key;
    END IF;
    -- Element assignments: O(1) each, where a join of arrays gets a nested loop.
    v_won := array_fill(false, ARRAY[coalesce((SELECT max(o) FROM unnest(p_ord) o), 0)]);
    FOR i IN 1 .. coalesce(cardinality(won_ord), 0) LOOP
        v_won[won_ord[i]] := true;
    END LOOP;
    turned := ARRAY(
        SELECT ROW(s.ord, s.name,
                   format('turned away by without_overlapping (key %s), %s', s.key,
                          CASE WHEN coalesce((s.cfg ->> 'dont_release')::boolean, false) THEN 'deleted (dont_release)'
                               ELSE format('released for %ss', coalesce((s.cfg ->> 'release_after')::int, 0)) END),
                   coalesce((s.cfg ->> 'release_after')::int, 0),
                   coalesce((s.cfg ->> 'dont_release')::boolean, false), NULL, NULL, NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
        WHERE s.name = 'without_overlapping' AND s.key IS NOT NULL AND NOT v_won[s.ord]);END;
$$;

COMMENT ON FUNCTION pgq._admit_overlap(int[], text[], jsonb[], text[], uuid[], uuid[], text, timestamptz) IS
    'Admission: without_overlapping for one middleware position of a batch: the leases won and the jobs turned away (S26, S34, S81).';

-- pgq._concurrency_lock_ids: the advisory lock ids of concurrency_limited (S99), one
-- per name: of named limits (p_kind 'limit': held shared by a reserve from before it
-- reads the limit until it commits, taken alone by pgq.define_concurrency to change
-- it), of keys (p_kind 'key': taken by a reserve that admits jobs of a key whose
-- places exceed its limit, pgq._admit_concurrency_keys), or of keys' wakes (p_kind
-- 'wake': taken alone by a reserve's last stage when it leaves jobs of the key waiting,
-- pgq._concurrency_waits; held shared by a transaction that frees a place of the key,
-- pgq._release_overlap).
CREATE OR REPLACE FUNCTION pgq._concurrency_lock_ids(p_kind text, p_names text[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'concurrency_' || p_kind || ':' || u.name
                               FROM unnest(p_names) WITH ORDINALITY u(name, n) ORDER BY u.n));
END;
$$;

COMMENT ON FUNCTION pgq._concurrency_lock_ids(text, text[]) IS 'The advisory lock ids of named concurrency limits (''limit'') or of concurrency_limited keys (''key''), one per name (S99).';

-- pgq._admit_concurrency_keys: the first stage of pgq._admit_concurrency, for one
-- position of the middleware lists of a batch (as pgq._admit_overlap): the jobs under
-- concurrency_limited whose limit exists (place, key, limit), in batch order, and their
-- keys with the limit and places of each (as its first job in the batch has them; a
-- class's own numeric limit has as many places as its limit), in key order. Until the
-- transaction ends, it guarantees for what it returns:
--   - a named limit was read under its lock, held shared: pgq.define_concurrency waits
--     for that lock alone to lower it, so no job is admitted under a limit lowered
--     since it was read, and every place taken under the higher limit is a lease
--     visible once the lowering has committed;
--   - a key whose places exceed its limit is this transaction's alone: handlers that
--     started under a higher limit may hold places above it, so a free place does not
--     mean the key has room; the reserves that admit its jobs count its handlers one
--     after another, each (in a statement after this call) seeing the leases of those
--     before.
-- A job whose limit or key another transaction holds is left waiting, untouched, for a
-- later reserve (busy, as for a rate limit's window, S82). A named limit dropped after
-- dispatch admits its jobs: they are not returned.
CREATE OR REPLACE FUNCTION pgq._admit_concurrency_keys(
    p_ord int[], p_name text[], p_cfg jsonb[], p_key text[],
    OUT ords int[], OUT keys text[], OUT lims int[], OUT k_key text[], OUT k_lim int[], OUT k_places int[],
    OUT busy pgq.admission[]
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
SET enable_hashjoin = on SET enable_mergejoin = on  -- joins of the batch's arrays: see pgq._admit
AS $$
DECLARE
    v_named  text[];                    -- the batch's named limits, and whether this transaction holds their lock
    v_ours   boolean[];
    v_places int[];                     -- per job: its key's places, and whether its limit's lock is another's
    v_busy   boolean[];
    v_k_ours boolean[];                 -- per key: this transaction may admit its jobs
BEGIN
    SELECT array_agg(DISTINCT s.cfg ->> 'limit') INTO v_named
    FROM unnest(p_name, p_cfg, p_key) s(name, cfg, key)
    WHERE s.name = 'concurrency_limited' AND s.key IS NOT NULL AND jsonb_typeof(s.cfg -> 'limit') = 'string';
    v_ours := ARRAY(SELECT pg_try_advisory_xact_lock_shared(l.id)
                    FROM unnest(pgq._concurrency_lock_ids('limit', v_named)) WITH ORDINALITY l(id, n) ORDER BY l.n);
    -- The limits, in a statement after their locks: it sees a lowering that committed.
    SELECT array_agg(j.ord), array_agg(j.key), array_agg(j.lim), array_agg(j.places), array_agg(j.busy)
    INTO ords, keys, lims, v_places, v_busy
    FROM (SELECT s.ord, s.key, coalesce(n.lim, l."limit") AS lim, coalesce(n.lim, l.places) AS places,
                 coalesce(NOT v_ours[array_position(v_named, s.cfg ->> 'limit')], false) AS busy
          FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
          CROSS JOIN LATERAL (SELECT CASE jsonb_typeof(s.cfg -> 'limit') WHEN 'number' THEN (s.cfg ->> 'limit')::int END AS lim) n
          LEFT JOIN LATERAL (SELECT l."limit", l.places FROM pgq.concurrency_limits l
                             WHERE n.lim IS NULL AND l.name = s.cfg ->> 'limit') l ON true
          WHERE s.name = 'concurrency_limited' AND s.key IS NOT NULL
          ORDER BY s.ord) j
    WHERE j.lim IS NOT NULL OR j.busy;
    IF ords IS NULL THEN
        RETURN;
    END IF;
    -- Each key's lock is tried only while its places exceed its limit.
    SELECT array_agg(k.key), array_agg(k.lim), array_agg(k.places),
           array_agg(CASE WHEN k.places > k.lim THEN pg_try_advisory_xact_lock((pgq._concurrency_lock_ids('key', ARRAY[k.key]))[1])
                          ELSE true END)
    INTO k_key, k_lim, k_places, v_k_ours
    FROM (SELECT DISTINCT ON (j.key) j.key, j.lim, j.places
          FROM unnest(ords, keys, lims, v_places, v_busy) j(ord, key, lim, places, busy)
          WHERE NOT j.busy
          ORDER BY j.key, j.ord) k;
    IF true = ALL (v_k_ours) AND false = ALL (v_busy) THEN
        busy := '{}';
        RETURN;
    END IF;
    busy := ARRAY(
        SELECT ROW(j.ord, 'concurrency_limited',
                   format('concurrency_limited key %s: another transaction holds its limit or key; left waiting', j.key),
                   NULL, false, NULL, NULL, NULL, true)::pgq.admission
        FROM unnest(ords, keys, v_busy) j(ord, key, busy)
        LEFT JOIN unnest(k_key, v_k_ours) k(key, ours) ON k.key = j.key
        WHERE j.busy OR NOT k.ours);
    SELECT array_agg(j.ord), array_agg(j.key), array_agg(j.lim) INTO ords, keys, lims
    FROM (SELECT j.ord, j.key, j.lim
          FROM unnest(ords, keys, lims, v_busy) j(ord, key, lim, busy)
          JOIN unnest(k_key, v_k_ours) k(key, ours) ON k.key = j.key AND k.ours
          WHERE NOT j.busy
          ORDER BY j.ord) j;
    SELECT array_agg(k.key), array_agg(k.lim), array_agg(k.places) INTO k_key, k_lim, k_places
    FROM (SELECT * FROM unnest(k_key, k_lim, k_places, v_k_ours) WITH ORDINALITY k(key, lim, places, ours, n)
          WHERE k.ours ORDER BY k.n) k;
END;
$$;

COMMENT ON FUNCTION pgq._admit_concurrency_keys(int[], text[], jsonb[], text[]) IS
    'Admission: the jobs of one middleware position under concurrency_limited and their keys'' limits and places, read under the locks that keep them exact; the jobs left waiting when another transaction holds those (S99).';

-- pgq._admit_concurrency: concurrency_limited (S99) for one position of the middleware
-- lists of a batch (as pgq._admit_overlap). A key whose limit is N has N places; a
-- running job holds one by an overlap lease on the place ('#' key '#' i), so that it
-- has S34's guarantees: renewed by its worker's heartbeats, ended with its attempt,
-- free within the overlap TTL when its worker is gone. A key may start as many
-- handlers as its limit less those holding any of its places 1..places
-- (pgq._admit_concurrency_keys, pgq._concurrency_room): a handler that started under a
-- higher limit keeps its place above the new one until it ends. New jobs take places
-- in 1..N only. Each key's places are offered in an order of this call's own (reserves running together seldom
-- start at the same place): the places no live lease holds are locked without waiting,
-- in that order, until as many are locked as the key has jobs and room, in one
-- statement; a place another reserve is taking (its lock held) is passed over. The
-- places locked go to the key's jobs in batch order through pgq._admit_overlap, which
-- checks their leases again after the locks; a place leased meanwhile sends its job on
-- to the next ones. A job that gets none waits uncounted: turned_by
-- concurrency_limited, its key in held, and delay the seconds until the first of the
-- key's leases could run out (at least 1). Returns the leases won, the jobs waiting,
-- and those left waiting untouched (busy).
CREATE OR REPLACE FUNCTION pgq._admit_concurrency(
    p_ord int[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamptz,
    OUT turned pgq.admission[], OUT won_ord int[], OUT won_key text[], OUT won_exp int[]
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
SET enable_hashjoin = on SET enable_mergejoin = on  -- joins of the batch's arrays: see pgq._admit
AS $$
DECLARE
    v_ord   int[];                      -- the jobs to admit: place, key, limit
    v_key   text[];
    v_lim   int[];
    v_k_key text[];                     -- per key: the key, its limit and places, where its places start in v_p_*,
    v_k_lim int[]; v_k_places int[];    -- the next of them to offer, and how many more handlers it may start
    v_k_at  int[]; v_k_next int[]; v_k_room int[];
    v_p_name text[];                    -- every place of the batch's keys (per key, 1..limit in offer order,
    v_p_id  bigint[]; v_p_live boolean[];  -- then those above): name, lock id, leased
    v_h_name text[];                    -- the places a live lease holds: name, the lease's end
    v_h_end timestamptz[];
    v_l_key int[]; v_l_at int[];        -- the places locked in a round: key (index), place (index)
    v_o_ord int[];                      -- the jobs offered a place, and the place
    v_place text[];
    v_spin  int := floor(random() * 1000)::int;
    v_ov    record;
BEGIN
    SELECT k.ords, k.keys, k.lims, k.k_key, k.k_lim, k.k_places, k.busy
    INTO v_ord, v_key, v_lim, v_k_key, v_k_lim, v_k_places, turned
    FROM pgq._admit_concurrency_keys(p_ord, p_name, p_cfg, p_key) k;
    IF v_ord IS NULL THEN
        RETURN;
    END IF;
    -- Each key's places, those of a key together, then which a live lease holds, by one
    -- index scan of their names (a join with the leases gets planned as a scan of every
    -- generation); then each key's room.
    v_k_at := ARRAY(SELECT 1 + (sum(k.places) OVER (ORDER BY k.n) - k.places)::int
                    FROM unnest(v_k_places) WITH ORDINALITY k(places, n) ORDER BY k.n);
    v_k_next := v_k_at;
    v_p_name := ARRAY(SELECT '#' || k.key || '#' || CASE WHEN i < k.lim THEN 1 + (i + v_spin) % k.lim ELSE i + 1 END
                      FROM unnest(v_k_key, v_k_lim, v_k_places) WITH ORDINALITY k(key, lim, places, n),
                           generate_series(0, k.places - 1) i
                      ORDER BY k.n, i);
    v_p_id := pgq._overlap_lock_ids(v_p_name);
    SELECT array_agg(o.key), array_agg(o.expires_at) INTO v_h_name, v_h_end
    FROM pgq.overlap_locks o
    WHERE o.key = ANY (v_p_name) AND o.expires_at > p_now;
    SELECT array_agg(h.name IS NOT NULL ORDER BY p.n) INTO v_p_live
    FROM unnest(v_p_name) WITH ORDINALITY p(name, n) LEFT JOIN unnest(v_h_name) h(name) ON h.name = p.name;
    v_k_room := pgq._concurrency_room(v_k_lim, v_k_places, v_k_at, v_p_name, v_p_id, v_p_live, v_h_name);
    LOOP
        -- Per key, its free places from the next not yet offered, locked without waiting
        -- until as many are locked as it has jobs without one and room: the LIMIT stops
        -- the locking there (the lateral scan evaluates its filter row by row).
        SELECT array_agg(k.n ORDER BY k.n, c.i), array_agg(c.i ORDER BY k.n, c.i) INTO v_l_key, v_l_at
        FROM (SELECT n, count(*) FILTER (WHERE j.ord <> ALL (coalesce(won_ord, '{}'))) AS jobs, count(*) AS all_jobs
              FROM unnest(v_key, v_ord) j(key, ord), array_position(v_k_key, j.key) n
              GROUP BY n) k
        CROSS JOIN LATERAL (
            SELECT i FROM generate_series(v_k_next[k.n], v_k_at[k.n] + v_k_lim[k.n] - 1) i
            WHERE NOT v_p_live[i] AND pg_try_advisory_xact_lock(v_p_id[i])
            LIMIT greatest(least(k.jobs, v_k_room[k.n] - (k.all_jobs - k.jobs)), 0)) c;
        EXIT WHEN v_l_key IS NULL;
        -- The next round offers each key the places after its last one locked here.
        FOR i IN 1 .. cardinality(v_l_key) LOOP
            v_k_next[v_l_key[i]] := v_l_at[i] + 1;
        END LOOP;
        WITH jobs AS (
            SELECT j.ord, array_position(v_k_key, j.key) AS k, row_number() OVER (PARTITION BY j.key ORDER BY j.ord) AS n
            FROM unnest(v_ord, v_key) j(ord, key)
            WHERE j.ord <> ALL (coalesce(won_ord, '{}'))
        ), places AS (
            SELECT l.k, l.at, row_number() OVER (PARTITION BY l.k ORDER BY l.at) AS n
            FROM unnest(v_l_key, v_l_at) l(k, at)
        )
        SELECT array_agg(j.ord ORDER BY j.ord), array_agg(v_p_name[p.at] ORDER BY j.ord) INTO v_o_ord, v_place
        FROM jobs j JOIN places p ON p.k = j.k AND p.n = j.n;
        v_ov := pgq._admit_overlap(v_o_ord, array_fill('without_overlapping'::text, ARRAY[cardinality(v_o_ord)]),
                                   array_fill('{}'::jsonb, ARRAY[cardinality(v_o_ord)]), v_place, p_uuids, p_tokens, p_worker, p_now);
        won_ord := won_ord || v_ov.won_ord;
        won_key := won_key || v_ov.won_key;
        won_exp := won_exp || v_ov.won_exp;
        EXIT WHEN cardinality(won_ord) = cardinality(v_ord);
    END LOOP;
    -- A job left waiting is ready again when a job of its key ends, or when the first of
    -- its key's leases could run out: one held before this call, or else one it took.
    turned := turned || ARRAY(
        SELECT ROW(j.ord, 'concurrency_limited', format('waits for a place of concurrency_limited key %s (limit %s)', j.key, j.lim),
                   greatest(1, ceil(extract(epoch FROM coalesce(
                       (SELECT min(h.e) FROM unnest(v_h_name, v_h_end) h(name, e)
                        WHERE h.name = ANY (v_p_name[v_k_at[k.n] : v_k_at[k.n] + v_k_places[k.n] - 1])),
                       pgq._overlap_until(p_now, p_now, NULL)) - p_now)))::int,
                   false, ARRAY[j.key], NULL, NULL, NULL)::pgq.admission
        FROM unnest(v_ord, v_key, v_lim) j(ord, key, lim), array_position(v_k_key, j.key) k(n)
        WHERE j.ord <> ALL (coalesce(won_ord, '{}')));
    -- Checked again at the reserve's end (pgq._concurrency_waits).
    PERFORM pgq._concurrency_waiting(v_k_key, v_k_lim, v_k_places,
                                     ARRAY(SELECT p_uuids[j.ord] FROM unnest(v_ord) j(ord) WHERE j.ord <> ALL (coalesce(won_ord, '{}'))),
                                     ARRAY(SELECT j.key FROM unnest(v_ord, v_key) j(ord, key) WHERE j.ord <> ALL (coalesce(won_ord, '{}'))));
END;
$$;

COMMENT ON FUNCTION pgq._admit_concurrency(int[], text[], jsonb[], text[], uuid[], uuid[], text, timestamptz) IS
    'Admission: concurrency_limited for one middleware position of a batch: the places won (as overlap leases), the jobs left to wait, uncounted, and those left untouched while another transaction counts their key (S99).';

-- pgq._concurrency_waiting: notes, for pgq._concurrency_waits at the reserve's end, the
-- jobs (p_uuids, with their keys p_wkeys) that pgq._admit_concurrency leaves waiting
-- for a place, and the limit and places of each key of p_keys (p_lims, p_places). Kept
-- in the transaction's setting pgq.concurrency_waits: the elements of a jsonb array of
-- [key, limit, places, uuid], as text, appended to without being read (a reserve
-- passing over a thousand jobs one pick at a time notes as many times).
CREATE OR REPLACE FUNCTION pgq._concurrency_waiting(
    p_keys text[], p_lims int[], p_places int[], p_uuids uuid[], p_wkeys text[]
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF cardinality(p_uuids) > 0 THEN
        PERFORM set_config('pgq.concurrency_waits',
            concat_ws(',', nullif(current_setting('pgq.concurrency_waits', true), ''),
                      (SELECT string_agg(jsonb_build_array(w.key, p_lims[k.n], p_places[k.n], w.uuid)::text, ',')
                       FROM unnest(p_wkeys, p_uuids) w(key, uuid), array_position(p_keys, w.key) k(n))),
            true);
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._concurrency_waiting(text[], int[], int[], uuid[], text[]) IS
    'Admission: notes the jobs left waiting for a concurrency_limited place, for the check at the reserve''s end (S99).';

-- pgq._concurrency_waits: the last stage of pgq.reserve: the jobs it left waiting for a
-- place of a concurrency_limited key (pgq._concurrency_waiting) wait only if this
-- transaction holds the key's wake lock alone and then, in a statement after it, no
-- place of the key is free: within its limit, none without a live lease whose lock
-- this transaction can take, or no room (pgq._concurrency_room). An end of a job that
-- holds a place, and a reserve that gives back a place it took, take the key's wake
-- lock shared before they free it and wake the key's waiting jobs after
-- (pgq._release_overlap): an end under way now wakes these jobs once this transaction
-- commits, and a place freed by one that committed since the jobs were counted is
-- found here. A key with a place free has its jobs made ready now, and its queue's
-- workers woken; a key whose wake lock another transaction holds (an end not yet
-- committed, which wakes no job it cannot see) has them ready a tenth of a second on,
-- for the next reserve, not woken: reserves do not go round while the end is open.
-- Last: the lock is taken alone only where nothing is waited for after it, so an end
-- waiting for it never waits in a cycle.
CREATE OR REPLACE FUNCTION pgq._concurrency_waits(p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
AS $$
DECLARE
    v_w     jsonb := '[' || nullif(current_setting('pgq.concurrency_waits', true), '') || ']';
    v_key   text[]; v_lim int[]; v_places int[]; v_alone boolean[];  -- per key
    v_at    int[];
    v_names text[]; v_ids bigint[]; v_live boolean[];  -- per place
    v_held  text[];
    v_room  int[];
    v_ready text[];    -- the keys whose jobs may not wait: a place is free,
    v_later text[];    -- or an end is under way
    v_queue text;
BEGIN
    IF v_w IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('pgq.concurrency_waits', '', true);
    SELECT array_agg(k.key ORDER BY k.key), array_agg(k.lim ORDER BY k.key), array_agg(k.places ORDER BY k.key)
    INTO v_key, v_lim, v_places
    FROM (SELECT w ->> 0 AS key, max((w ->> 1)::int) AS lim, max((w ->> 2)::int) AS places
          FROM jsonb_array_elements(v_w) w GROUP BY 1) k;
    v_alone := ARRAY(SELECT pg_try_advisory_xact_lock(l.id)
                     FROM unnest(pgq._concurrency_lock_ids('wake', v_key)) WITH ORDINALITY l(id, n) ORDER BY l.n);
    -- The places as pgq._admit_concurrency counts them, read after the locks.
    v_at := ARRAY(SELECT 1 + (sum(k.places) OVER (ORDER BY k.n) - k.places)::int
                  FROM unnest(v_places) WITH ORDINALITY k(places, n) ORDER BY k.n);
    v_names := ARRAY(SELECT '#' || k.key || '#' || i FROM unnest(v_key, v_places) WITH ORDINALITY k(key, places, n),
                                                         generate_series(1, k.places) i ORDER BY k.n, i);
    v_ids := pgq._overlap_lock_ids(v_names);
    v_held := ARRAY(SELECT o.key FROM pgq.overlap_locks o WHERE o.key = ANY (v_names) AND o.expires_at > p_now);
    v_live := ARRAY(SELECT p.name = ANY (v_held) FROM unnest(v_names) WITH ORDINALITY p(name, n) ORDER BY p.n);
    v_room := pgq._concurrency_room(v_lim, v_places, v_at, v_names, v_ids, v_live, v_held);
    v_later := ARRAY(SELECT k.key FROM unnest(v_key, v_alone) k(key, alone) WHERE NOT k.alone);
    v_ready := ARRAY(SELECT k.key FROM unnest(v_key, v_lim, v_at, v_alone, v_room) WITH ORDINALITY k(key, lim, at, alone, room, n)
                     WHERE k.alone AND k.room > 0
                       AND EXISTS (SELECT FROM generate_series(k.at, k.at + k.lim - 1) i
                                   WHERE NOT v_live[i] AND pg_try_advisory_xact_lock(v_ids[i])));
    IF cardinality(v_ready) + cardinality(v_later) = 0 THEN
        RETURN;
    END IF;
    FOR v_queue IN
        WITH ready AS (
            UPDATE pgq.jobs j
            SET available_at = CASE WHEN w.key = ANY (v_ready) THEN least(p_now, now()) ELSE now() + interval '0.1 s' END,
                waits_on = NULL
            FROM (SELECT w ->> 0 AS key, (w ->> 3)::uuid AS uuid FROM jsonb_array_elements(v_w) w) w
            WHERE (w.key = ANY (v_ready) OR w.key = ANY (v_later)) AND j.uuid = w.uuid AND j.waits_on = w.key
              AND j.reserved_at IS NULL
            RETURNING j.queue, w.key = ANY (v_ready) AS woken
        )
        SELECT DISTINCT r.queue FROM ready r WHERE r.woken
    LOOP
        PERFORM pgq._notify(v_queue);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._concurrency_waits(timestamptz) IS
    'Reserve''s last stage: the jobs it left waiting for a concurrency_limited place are made ready again unless the key''s wake lock is held alone and no place is free (S99).';

-- pgq._concurrency_room: how many more handlers each key of pgq._admit_concurrency may
-- start: its limit less its handlers running, those whose lease on one of its places
-- (1..places) is live, and those above its limit whose lease ran out while their SQL
-- handler's transaction still holds the place's lock (S34: the handler may still run;
-- in 1..limit such a place is not taken, its lock being held). p_lim, p_places, p_at:
-- per key, its limit, its places and where they start in p_names; p_names, p_ids,
-- p_live: per place, its name, its lock id and whether a live lease holds it; p_leased:
-- the places live leases hold.
CREATE OR REPLACE FUNCTION pgq._concurrency_room(
    p_lim int[], p_places int[], p_at int[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]
) RETURNS int[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN ARRAY(
        SELECT k.lim - (SELECT count(*) FROM generate_series(k.at, k.at + k.places - 1) i WHERE p_live[i])
               - CASE WHEN k.places > k.lim THEN
                     (SELECT count(DISTINCT o.key) FROM pgq.overlap_locks o
                      WHERE o.key = ANY (p_names[k.at + k.lim : k.at + k.places - 1])
                        AND CASE WHEN o.key <> ALL (coalesce(p_leased, '{}'))  -- (a CASE: only those places' locks are tried)
                                 THEN NOT pg_try_advisory_xact_lock(p_ids[array_position(p_names, o.key)]) ELSE false END)
                 ELSE 0 END
        FROM unnest(p_lim, p_places, p_at) WITH ORDINALITY k(lim, places, at, n)
        ORDER BY k.n);
END;
$$;

COMMENT ON FUNCTION pgq._concurrency_room(int[], int[], int[], text[], bigint[], boolean[], text[]) IS
    'Admission: how many more handlers each concurrency_limited key may start: its limit less those holding its places, above the limit too (S99).';

-- pgq._admit_rate: rate_limited (S28, S82) for one position of the middleware lists of
-- a batch (as pgq._admit_overlap): a fixed window per (limit, key), exact under
-- concurrency. Each window is written only under its advisory lock, created when
-- missing, then read, then written once with the hits of this call. The first call of
-- a transaction that needs windows waits for their locks, in (limit, key) order; once
-- it holds one, a transaction never waits for another: a window whose lock another one
-- holds is busy, and its jobs are left waiting for a later reserve. Within the budget
-- left, the jobs of a key are admitted in batch order. A limit dropped after dispatch
-- admits its jobs: there is no budget to keep (and so does one this call did not see
-- when it took its locks). Returns the jobs turned away or left
-- waiting (busy).
CREATE OR REPLACE FUNCTION pgq._admit_rate(p_ord int[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamptz)
RETURNS pgq.admission[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- joins of the batch's arrays: see pgq._admit
AS $$
DECLARE
    v_dec     pgq.admission[] := '{}';
    v_w_limit text[];                   -- the rate-limit windows of this position, in (limit, key) order,
    v_w_key   text[];
    v_w_id    bigint[];                 -- their advisory locks,
    v_w_ours  boolean[];                -- and whether this transaction holds each (else: busy)
BEGIN
    SELECT array_agg(w.limit_name ORDER BY w.limit_name, w.key), array_agg(w.key ORDER BY w.limit_name, w.key)
    INTO v_w_limit, v_w_key
    FROM (SELECT DISTINCT l.name AS limit_name, s.key
          FROM unnest(p_name, p_cfg, p_key) s(name, cfg, key)
          JOIN pgq.rate_limits l ON l.name = s.cfg ->> 'limit'
          WHERE s.name = 'rate_limited' AND s.key IS NOT NULL) w;
    v_w_id := pgq._window_lock_ids(v_w_limit, v_w_key);
    v_w_ours := '{}';
    IF current_setting('pgq.windows_locked', true) IS DISTINCT FROM 'on' THEN
        FOR i IN 1 .. coalesce(cardinality(v_w_id), 0) LOOP
            PERFORM pg_advisory_xact_lock(v_w_id[i]);
            v_w_ours[i] := true;
        END LOOP;
        IF v_w_id IS NOT NULL THEN
            PERFORM set_config('pgq.windows_locked', 'on', true);
        END IF;
    ELSE
        FOR i IN 1 .. coalesce(cardinality(v_w_id), 0) LOOP
            v_w_ours[i] := pg_try_advisory_xact_lock(v_w_id[i]);
        END LOOP;
    END IF;
    INSERT INTO pgq.rate_limit_windows AS w (limit_name, key, window_start, hits)
    SELECT o.limit_name, o.key, p_now, 0
    FROM unnest(v_w_limit, v_w_key, v_w_ours) o(limit_name, key, ours)
    WHERE o.ours
    ORDER BY 1, 2
    -- (locks an existing row without writing it, which waits for no one now: a
    -- REPEATABLE READ caller whose snapshot misses a later count fails here)
    ON CONFLICT (limit_name, key) DO UPDATE SET hits = w.hits WHERE false;
    IF false = ANY (v_w_ours) THEN
        v_dec := ARRAY(
            SELECT ROW(s.ord, s.name,
                       format('rate limit %s, key %s: its window is locked by another reserve; left waiting',
                              b.limit_name, b.key),
                       NULL, false, NULL, NULL, NULL, true)::pgq.admission
            FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
            JOIN unnest(v_w_limit, v_w_key, v_w_ours) b(limit_name, key, ours)
              ON NOT b.ours AND b.limit_name = s.cfg ->> 'limit' AND b.key = s.key
            WHERE s.name = 'rate_limited');
    END IF;
    -- Only the windows locked above: this statement's snapshot may see a limit that the
    -- first one did not (defined since), whose windows this transaction does not hold.
    WITH hit AS (
        SELECT s.ord, l.name AS limit_name, s.key, l.max, l.per,
               row_number() OVER (PARTITION BY l.name, s.key ORDER BY s.ord) AS n
        FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
        JOIN unnest(v_w_limit, v_w_key, v_w_ours) o(limit_name, key, ours)
          ON o.ours AND o.limit_name = s.cfg ->> 'limit' AND o.key = s.key
        JOIN pgq.rate_limits l ON l.name = o.limit_name
        WHERE s.name = 'rate_limited'
    ), budget AS (
        -- the window as this call leaves it: reset when it has ended
        SELECT h.limit_name, h.key, h.max, h.per, count(*) AS wanted,
               w.window_start + h.per <= p_now AS reset,
               CASE WHEN w.window_start + h.per <= p_now THEN p_now ELSE w.window_start END AS window_start,
               CASE WHEN w.window_start + h.per <= p_now THEN 0 ELSE w.hits END AS used
        FROM hit h
        JOIN pgq.rate_limit_windows w ON w.limit_name = h.limit_name AND w.key = h.key
        GROUP BY h.limit_name, h.key, h.max, h.per, w.window_start, w.hits
    ), counted AS (
        UPDATE pgq.rate_limit_windows w
        SET window_start = b.window_start,
            hits = b.used + least(b.wanted, greatest(b.max - b.used, 0))
        FROM budget b
        WHERE w.limit_name = b.limit_name AND w.key = b.key
          AND (b.reset OR b.max > b.used)
    )
    SELECT v_dec || coalesce(array_agg(ROW(h.ord, 'rate_limited',
               format('turned away by rate_limited (limit %s, key %s: %s per %s used), released for %ss',
                      h.limit_name, h.key, b.used + least(b.wanted, greatest(b.max - b.used, 0)), h.per,
                      ceil(extract(epoch FROM b.window_start + h.per - p_now))::int + pgq._turn_away_slack()),
               ceil(extract(epoch FROM b.window_start + h.per - p_now))::int + pgq._turn_away_slack(),
               false, NULL, NULL, NULL, NULL)::pgq.admission), '{}')
    INTO v_dec
    FROM hit h
    JOIN budget b ON b.limit_name = h.limit_name AND b.key = h.key
    WHERE h.n > b.max - b.used;
    RETURN v_dec;
END;
$$;

COMMENT ON FUNCTION pgq._admit_rate(int[], text[], jsonb[], text[], timestamptz) IS
    'Admission: rate_limited for one middleware position of a batch: the jobs turned away, or left waiting when their window is busy (S28, S82).';

-- pgq._admit_circuit: throttles_exceptions (S29) for one position of the middleware
-- lists of a batch (as pgq._admit_overlap): a job whose circuit is open is turned away
-- until it closes. Returns the jobs turned away.
CREATE OR REPLACE FUNCTION pgq._admit_circuit(p_ord int[], p_name text[], p_key text[], p_now timestamptz)
RETURNS pgq.admission[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_hashjoin = on SET enable_mergejoin = on  -- joins of the batch's arrays: see pgq._admit
AS $$
BEGIN
    RETURN ARRAY(
        SELECT ROW(s.ord, s.name,
                   format('turned away by throttles_exceptions (circuit %s open: %s exceptions within %ss), released for %ss',
                          c.key, c.failures, c.decay,
                          ceil(extract(epoch FROM c.window_start + make_interval(secs => c.decay) - p_now))::int + pgq._turn_away_slack()),
                   ceil(extract(epoch FROM c.window_start + make_interval(secs => c.decay) - p_now))::int + pgq._turn_away_slack(),
                   false, NULL, NULL, NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_key) s(ord, name, key)
        JOIN pgq.circuits c ON c.key = s.key
        WHERE s.name = 'throttles_exceptions'
          AND c.failures >= c.max_exceptions
          AND c.window_start + make_interval(secs => c.decay) > p_now);
END;
$$;

COMMENT ON FUNCTION pgq._admit_circuit(int[], text[], text[], timestamptz) IS
    'Admission: throttles_exceptions for one middleware position of a batch: the jobs whose circuit is open, turned away (S29).';

-- pgq._wait_for_places: the jobs of a batch (p_uuids, in the slot p_slot) that
-- admission (p_adm, by place in the batch) leaves waiting for a concurrency_limited
-- place wait, uncounted, until a place of their key frees (S99), in one statement: each
-- row as it was, but for when it is ready and what it waits on.
CREATE OR REPLACE FUNCTION pgq._wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
AS $$
BEGIN
    UPDATE pgq.jobs j SET available_at = p_now + make_interval(secs => w.delay), waits_on = w.key
    FROM (SELECT a.delay, a.held[1] AS key, p_uuids[a.ordinality] AS uuid
          FROM unnest(p_adm) WITH ORDINALITY a
          WHERE a.turned_by = 'concurrency_limited' AND a.error IS NULL AND a.busy IS NOT TRUE) w
    WHERE j.uuid = w.uuid AND j.slot = p_slot;
END;
$$;

COMMENT ON FUNCTION pgq._wait_for_places(smallint, pgq.admission[], uuid[], timestamptz) IS
    'Admission: the jobs of a batch left waiting for a concurrency_limited place wait, uncounted (S99).';

-- pgq._admission: stage 4 of pgq.reserve: the batch's jobs with middleware (those the
-- pickup checks let through, as reserved) are admitted by one pgq._admit call, in pick
-- order (S26-S29, S67). A job turned away uses its attempt (S5), is recorded (S19),
-- waits its delay (or with dont_release is deleted, S27) and keeps an until-processing
-- lock (S23); one whose middleware cannot be evaluated fails for good; one whose
-- rate-limit window, or concurrency limit or key, another transaction holds is left
-- waiting as it was, and ends the queue's turn (busy, S82, S99). The admitted are
-- handed over (S23) with their overlap leases (S34). A batch member failed for good
-- here cancels its batch's waiting members (S74), others of this batch among them:
-- those are dropped, the leases admission gave them ended. Returns the batch.
CREATE OR REPLACE FUNCTION pgq._admission(p_batch pgq.reserve_batch, p_now timestamptz, p_worker text)
RETURNS pgq.reserve_batch
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Local arrays: a plpgsql variable keeps an array expanded, so that reading or
    -- setting its n-th element does not walk the elements before it.
    v_admit  pgq.jobs[];
    v_places int[];
    v_tids   tid[];
    v_held   text[];
    v_expire int[];
    v_jobs   text[];                    -- the jobs' fields admission reads, one pass over them
    v_payloads jsonb[];
    v_mw     jsonb[];
    v_keys   jsonb[];
    v_uuids  uuid[];
    v_tokens uuid[];
    v_over   boolean[];                 -- per job: pgq._handing_over has work (S23, a debounce burst)
    v_adm    pgq.admission[];
    v_a      pgq.admission;
    v_job    pgq.jobs;
    v_cascade boolean := false;         -- a batch member failed for good: others may have ended with it
BEGIN
    IF cardinality(p_batch.admit) = 0 THEN
        RETURN p_batch;
    END IF;
    v_admit := p_batch.admit;
    v_places := p_batch.admit_ords;
    v_tids := p_batch.tids;
    v_held := p_batch.held;
    v_expire := p_batch.expire;
    SELECT array_agg(u.job), array_agg(u.payload), array_agg(u.middleware), array_agg(u.middleware_keys),
           array_agg(u.uuid), array_agg(u.lease_token),
           array_agg(u.unique_until = 'processing' OR u.debounce_key IS NOT NULL)
    INTO v_jobs, v_payloads, v_mw, v_keys, v_uuids, v_tokens, v_over
    FROM (SELECT * FROM unnest(v_admit) WITH ORDINALITY ORDER BY ordinality) u;  -- aggregates keep this order
    v_adm := ARRAY(SELECT a FROM pgq._admit(v_jobs, v_payloads, v_mw, v_keys, v_uuids, v_tokens, p_worker, p_now) a
                   ORDER BY a.ord);
    FOR i IN 1 .. cardinality(v_adm) LOOP
        v_a := v_adm[i];
        IF v_cascade AND NOT pgq._still_waiting(p_batch.slot, v_tids[v_places[i]]) THEN
            PERFORM pgq._release_overlap(ARRAY[v_uuids[i]], v_a.held);
            v_tids[v_places[i]] := NULL;
            CONTINUE;
        END IF;
        IF v_a.turned_by IS NULL AND v_a.error IS NULL AND v_a.busy IS NOT TRUE THEN  -- admitted
            IF v_over[i] THEN
                PERFORM pgq._handing_over(v_admit[i]);
            END IF;
            v_held[v_places[i]] := CASE WHEN cardinality(v_a.held) > 0 THEN v_a.held::text END;
            v_expire[v_places[i]] := v_a.held_expire_after;
            CONTINUE;
        END IF;
        v_job := v_admit[i];
        IF v_a.busy THEN
            p_batch.busy := true;
        ELSIF v_a.error IS NOT NULL THEN
            PERFORM pgq._record(v_job, 'failed', p_now, v_a.error, p_final => true, p_started => false);
            PERFORM pgq._bury(v_job, v_a.error, p_now);
            p_batch.reports := p_batch.reports || pgq._reported(v_job, 'failed', v_a.error);
            p_batch.report_places := p_batch.report_places || v_places[i];
            v_cascade := v_cascade OR v_job.batch_id IS NOT NULL;
        ELSIF v_a.turned_by = 'concurrency_limited' THEN
            p_batch.turned := p_batch.turned || v_job.id;  -- waits, below
        ELSE
            PERFORM pgq._turn_away(v_job, v_a.turned_by, v_a.note, v_a.delay, v_a.drop, p_now);
            p_batch.reports := p_batch.reports || pgq._reported(v_job, 'turned_away', v_a.note, v_a.turned_by);
            p_batch.report_places := p_batch.report_places || v_places[i];
            p_batch.turned := p_batch.turned || v_job.id;
        END IF;
        v_tids[v_places[i]] := NULL;
    END LOOP;
    FOR i IN 1 .. CASE WHEN v_cascade THEN cardinality(v_adm) ELSE 0 END LOOP  -- admitted before the failure ended them
        IF v_tids[v_places[i]] IS NOT NULL AND NOT pgq._still_waiting(p_batch.slot, v_tids[v_places[i]]) THEN
            PERFORM pgq._release_overlap(ARRAY[v_uuids[i]], v_adm[i].held);
            v_tids[v_places[i]] := NULL;
            v_held[v_places[i]] := NULL;
        END IF;
    END LOOP;
    PERFORM pgq._wait_for_places(p_batch.slot, v_adm, v_uuids, p_now);
    p_batch.tids := v_tids;
    p_batch.held := v_held;
    p_batch.expire := v_expire;
    p_batch.admit := '{}';
    RETURN p_batch;
END;
$$;

COMMENT ON FUNCTION pgq._admission(pgq.reserve_batch, timestamptz, text) IS
    'Reserve stage 4: the batch''s jobs with middleware are admitted, turned away (S27-S29), failed, or left waiting for a busy window (S82); returns the batch.';
