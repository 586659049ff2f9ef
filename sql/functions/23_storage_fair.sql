-- Storage, internal: fair queues (S114-S121). A queue defined with fair_by takes its
-- jobs round-robin across keys (the payload's fair_by field, kept in pgq.jobs.fair_key):
-- a weighted round-robin by pass, as in stride scheduling. Each key with live jobs has
-- a turn (pgq.fair_turns) with a pass; a reserve serves the keys of the highest
-- priority that has a ready job by ascending pass (then key), up to its weight
-- (pgq.fair_weights, 1 by default) a key a round, and each job it takes adds 1/weight
-- to its key's pass. A key that gets a turn starts at the queue's floor: the lowest
-- pass in play, or the highest pass when every turn is parked (pgq._fair_floor), so it
-- waits at most one round, whatever the others' backlog (S115); within a key the jobs
-- go in queue order (S116).
--
-- A key found with no live job (waiting or reserved) keeps its turn, parked, for
-- pgq._fair_keep() (S126), so that a key that dispatches a job a second makes no new
-- turn each time; the first reserve that walks it after, finding it still with no live
-- job, ends the turn. A transaction that stores jobs of a key holds the key's 'fair'
-- lock shared until it ends (pgq._fair_enter), and a reserve ends a turn only when it
-- gets that lock alone and then, in a later statement, still sees no live job of the
-- key: every store that began before is then visible, and every store that begins
-- later waits for the reserve's end and finds no turn, so it makes one (at its commit:
-- S121). So no key is left with jobs and no turn. A reserve tries the lock only for a
-- key it sees with no live job, so stores of keys with live jobs never wait for a
-- reserve.
--
-- A key walked with nothing ready but with live jobs (they wait for later, or all run)
-- is parked (S125): its turn stays, with parked_until the time its first waiting job
-- becomes ready ('infinity' when all run), and reserves pass it over until then, so a
-- queue with thousands of such keys costs a reserve nothing for them. A job of the key
-- written waiting since (dispatched, run now, released, backed off, given back, woken)
-- brings the turn back at once: every session's next reserve finds such rows by their
-- txid, as it does for its marks (S77), walks their turns as if in play, and brings
-- them back at its end (pgq._pick_begin notes them in the setting pgq.fair_back, for
-- pgq._fair_turns_now and pgq._fair_settle). A session's first reserve on a queue has
-- no snapshot to look from: at its end it checks every parked turn of the queue and
-- brings back those whose key has a job ready earlier. A reserve locks turns only at
-- its end, in one ordered statement, so reserves never deadlock over them. A turn back
-- from parking rejoins just ahead of the queue's floor: it banks no turns while parked,
-- and waits for none when back.
--
-- Fair queues keep no loads (pgq._store writes their rows one by one) and do not start
-- from the session's marks (S77): they walk each key's jobs from its front in
-- jobs_fair_idx. pgq.reserve still moves the marks of a fair queue with pgq._pick_done,
-- which reads the waiting rows as they are, so the marks stay right for the
-- pgq._pick that serves what no turn holds (S118).

-- pgq._fair_lock: the second key of the 'fair' advisory lock (pgq._lock_space) of key
-- p_key of the fair queue p_queue: one of 256, so that a transaction that stores jobs of
-- many keys holds at most 256 of them, whatever its keys (the server's lock table holds
-- some 64 a connection). Keys that share a lock only make a reserve keep an idle turn
-- a while longer.
CREATE OR REPLACE FUNCTION pgq._fair_lock(p_queue text, p_key text) RETURNS int
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN hashtext(p_queue || '/' || p_key) & 255;
END;
$$;

COMMENT ON FUNCTION pgq._fair_lock(text, text) IS
    'The second key of a fair queue''s key''s ''fair'' advisory lock: one of 256 (S120).';

-- pgq._fair_round: one round of a fair queue's walk at priority p_prio, in the slots
-- p_slots: the next ready waiting rows of each key of p_keys in turn, up to its quota
-- (p_quotas), in the queue's order, locked with SKIP LOCKED, at most p_want in all,
-- none of p_skip; whether each is plain (pgq._pick); its key's place in p_keys (ords),
-- and its place among its key's rows here (nth, from 1). One statement: a key's probe
-- runs only when the rows before it leave room, and locks a row only as the LIMIT
-- above it takes one, so no row is locked that is not returned (a row locked and not
-- taken would pass its key's FIFO order, S116). last: the place in p_keys of the last
-- key that gave a row.
CREATE OR REPLACE FUNCTION pgq._fair_round(
    p_slots smallint[], p_queue text, p_prio int, p_keys text[], p_quotas int[], p_want int, p_now timestamptz,
    p_skip bigint[],
    OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords int[], OUT nth int[],
    OUT last int
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    SELECT coalesce(array_agg(x.row_tid ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.row_slot ORDER BY x.ord, x.n), '{}'),
           coalesce(array_agg(x.row_id ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.row_plain ORDER BY x.ord, x.n), '{}'),
           coalesce(array_agg(x.ord ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.n ORDER BY x.ord, x.n), '{}'),
           max(x.ord)
    INTO tids, slots, ids, plain, ords, nth, last
    FROM (SELECT r.*, (row_number() OVER (PARTITION BY r.ord ORDER BY r.available_at, r.row_id))::int AS n
          FROM (SELECT t.ord::int AS ord, l.*
                FROM unnest(p_keys, p_quotas) WITH ORDINALITY t(key, quota, ord)
                CROSS JOIN LATERAL (
                    SELECT p.ctid AS row_tid, p.slot AS row_slot, p.id AS row_id, p.available_at,
                           p.middleware IS NULL AND p.attempts = 0 AND p.cancel_requested_at IS NULL AND p.batch_id IS NULL
                           AND p.debounce_key IS NULL AND p.unique_until IS DISTINCT FROM 'processing'
                           AND (p.retry_until IS NULL OR p.retry_until >= p_now) AS row_plain
                    FROM pgq.jobs p
                    WHERE p.queue = p_queue AND p.fair_key = t.key AND p.priority = p_prio
                      AND p.reserved_at IS NULL AND p.available_at <= p_now AND p.id <> ALL (p_skip)
                      AND p.slot IN (p_slots[1], p_slots[2], p_slots[3], p_slots[4])
                    ORDER BY p.available_at, p.id  -- jobs_fair_idx
                    LIMIT least(t.quota, p_want)
                    FOR UPDATE SKIP LOCKED) l
                LIMIT p_want) r) x;  -- numbered above the LIMIT: a sort below it would lock rows it drops
END;
$$;

COMMENT ON FUNCTION pgq._fair_round(smallint[], text, int, text[], int[], int, timestamptz, bigint[]) IS
    'Reserve: one round of a fair queue''s walk: each key''s next ready rows up to its quota, locked (SKIP LOCKED), in queue order within a key (S115, S116).';

-- pgq._fair_turns_now: the turns of the fair queue p_queue in play at p_now (not
-- parked, parked until then, or back: pgq.fair_back) as this reserve has moved them so
-- far, with each key's weight: its pass (a turn back from parking at least where it
-- rejoins, pgq._fair_rejoin) plus 1/weight for each job the reserve's
-- earlier picks took of it (pgq.fair_pending, pgq._fair_taken). The turns themselves
-- move at the reserve's end (pgq._fair_settle), so a reserve whose picks are cut short
-- (at a slot boundary) goes on with the round where it left it (S115, S125).
CREATE OR REPLACE FUNCTION pgq._fair_turns_now(p_queue text, p_now timestamptz) RETURNS TABLE (key text, pass float8, weight int)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_back  jsonb := coalesce(nullif(current_setting('pgq.fair_back', true), ''), '[]')::jsonb;
BEGIN
    RETURN QUERY
    SELECT t.key, CASE WHEN t.back THEN greatest(t.pass, (SELECT pgq._fair_rejoin(p_queue))) ELSE t.pass END  -- once, if at all
                  + coalesce(s.n, 0)::float8 / coalesce(w.weight, 1),
           coalesce(w.weight, 1)
    FROM (SELECT p.key, p.pass, false AS back FROM pgq.fair_turns p WHERE p.queue = p_queue AND p.parked_until IS NULL
          UNION ALL
          SELECT p.key, p.pass, true FROM pgq.fair_turns p WHERE p.queue = p_queue AND p.parked_until <= p_now
          UNION ALL
          -- A probe a key by fair_turns_pkey: the subquery names the key alone, and OFFSET 0
          -- keeps it apart, so that no plan reads every parked turn for each key instead.
          SELECT p.key, p.pass, true
          FROM (SELECT DISTINCT b ->> 1 AS k FROM jsonb_array_elements(v_back) b
                WHERE b ->> 0 = p_queue AND b ->> 1 IS NOT NULL AND (b ->> 2)::timestamptz <= p_now) b
          CROSS JOIN LATERAL (SELECT p.key, p.pass, p.parked_until FROM pgq.fair_turns p
                              WHERE p.queue = p_queue AND p.key = b.k OFFSET 0) p
          WHERE p.parked_until > p_now) t
    LEFT JOIN pgq.fair_weights w ON w.queue = p_queue AND w.key = t.key
    LEFT JOIN (SELECT e ->> 1 AS key, sum((e ->> 2)::int) AS n
               FROM jsonb_array_elements(coalesce(nullif(current_setting('pgq.fair_pending', true), ''), '[]')::jsonb) e
               WHERE e ->> 0 = p_queue
               GROUP BY 1) s ON s.key = t.key;
END;
$$;

COMMENT ON FUNCTION pgq._fair_turns_now(text, timestamptz) IS
    'Reserve: a fair queue''s turns in play, with the passes this reserve''s earlier picks moved on, and their weights (S115, S117, S125).';

-- pgq._fair_floor: where the turns of the fair queue p_queue start (S115, S125): the
-- lowest pass in play (fair_turns_play_idx); when every turn is parked, the highest
-- pass of the queue (fair_turns_pass_idx), so that a turn that starts or comes back
-- then is never behind the keys that come back after it. NULL: the queue has no turn.
CREATE OR REPLACE FUNCTION pgq._fair_floor(p_queue text) RETURNS float8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN coalesce((SELECT t.pass FROM pgq.fair_turns t WHERE t.queue = p_queue AND t.parked_until IS NULL
                     ORDER BY t.pass LIMIT 1),
                    (SELECT t.pass FROM pgq.fair_turns t WHERE t.queue = p_queue ORDER BY t.pass DESC LIMIT 1));
END;
$$;

COMMENT ON FUNCTION pgq._fair_floor(text) IS
    'Where a fair queue''s turns start: the lowest pass in play, or the highest when every turn is parked (S115, S125).';

-- pgq._fair_rejoin: where a turn of the fair queue p_queue back from parking rejoins:
-- just below the queue's floor (pgq._fair_floor; NULL: it keeps its own pass), so that
-- it banks no turns while parked and its next job goes ahead of the keys at the floor
-- (S125). Just below by a step of a few units in float8's last place at the floor's
-- size, so that it stays apart however large the passes grow, and far below a job's
-- 1/weight (at least 1/1000) until passes of some 10^11.
CREATE OR REPLACE FUNCTION pgq._fair_rejoin(p_queue text) RETURNS float8
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_floor float8 := pgq._fair_floor(p_queue);
BEGIN
    RETURN v_floor - greatest(1e-6, abs(v_floor) * 1e-15);
END;
$$;

COMMENT ON FUNCTION pgq._fair_rejoin(text) IS
    'Where a fair queue''s turn back from parking rejoins: just below the queue''s floor (S125).';

-- pgq._fair_next_ready: when the first waiting job of key p_key of the fair queue
-- p_queue is ready (NULL: it has none waiting): the first of each priority, one probe a
-- priority (jobs_fair_idx), so a key with a large backlog costs a few index reads.
CREATE OR REPLACE FUNCTION pgq._fair_next_ready(p_queue text, p_key text) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
    WITH RECURSIVE p AS (
        (SELECT j.priority, j.available_at FROM pgq.jobs j
         WHERE j.queue = p_queue AND j.fair_key = p_key AND j.reserved_at IS NULL
         ORDER BY j.priority DESC, j.available_at, j.id LIMIT 1)
        UNION ALL
        SELECT n.priority, n.available_at
        FROM p CROSS JOIN LATERAL (
            SELECT j.priority, j.available_at FROM pgq.jobs j
            WHERE j.queue = p_queue AND j.fair_key = p_key AND j.reserved_at IS NULL AND j.priority < p.priority
            ORDER BY j.priority DESC, j.available_at, j.id LIMIT 1) n
    )
    SELECT min(p.available_at) FROM p);
END;
$$;

COMMENT ON FUNCTION pgq._fair_next_ready(text, text) IS
    'When a fair queue''s key''s first waiting job is ready, by one probe a priority; NULL when none waits (S125).';

-- pgq._fair_rows: the next ready waiting rows of p_queue at priority p_prio, in the
-- slots p_slots, round-robin across its keys' turns, locked with SKIP LOCKED, at most
-- p_want, none of p_skip. A first round walks the turns by ascending pass, taking from
-- each key up to its weight; the keys that gave their whole share then take the rest
-- in further rounds, each its weight's share of what is left, one statement a round
-- (pgq._fair_round). Rows in walk order, each with its key (keys) and its tag (tags:
-- its key's pass plus n/weight for its key's n-th job here), by which they are taken.
-- idle: keys walked that were left with no ready row: those that gave none, and those
-- that gave fewer than their share of a round while the walk had room.
CREATE OR REPLACE FUNCTION pgq._fair_rows(
    p_slots smallint[], p_queue text, p_prio int, p_want int, p_now timestamptz, p_skip bigint[],
    OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[],
    OUT idle text[], OUT tags float8[]
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_tk    text[];    -- the turns in play by pass (then key): key, pass, weight
    v_tp    float8[];
    v_tw    int[];
    v_more  text[];    -- keys that gave their whole share: they may have more
    v_pass  float8[];  -- and their pass, weight and rows taken, in walk order
    v_w     int[];
    v_took  int[];
    v_m     int;
    v_r     record;    -- a round (pgq._fair_round)
BEGIN
    SELECT coalesce(array_agg(t.key ORDER BY t.pass, t.key), '{}'), coalesce(array_agg(t.pass ORDER BY t.pass, t.key), '{}'),
           coalesce(array_agg(t.weight ORDER BY t.pass, t.key), '{}')
    INTO v_tk, v_tp, v_tw
    FROM pgq._fair_turns_now(p_queue, p_now) t;
    -- The opening round: the turns by pass, each key's next jobs up to its weight, until
    -- p_want jobs. The turns walked before the last that gave a job, and every turn
    -- when it left room, that gave none are idle.
    v_r := pgq._fair_round(p_slots, p_queue, p_prio, v_tk, v_tw, p_want, p_now, p_skip);
    tids := v_r.tids; slots := v_r.slots; ids := v_r.ids; plain := v_r.plain;
    keys := ARRAY(SELECT v_tk[u.o] FROM unnest(v_r.ords) WITH ORDINALITY u(o, i) ORDER BY u.i);
    tags := ARRAY(SELECT v_tp[u.o] + u.n::float8 / v_tw[u.o] FROM unnest(v_r.ords, v_r.nth) WITH ORDINALITY u(o, n, i) ORDER BY u.i);
    idle := ARRAY(SELECT v_tk[o]
                  FROM generate_series(1, CASE WHEN cardinality(tids) < p_want THEN cardinality(v_tk) ELSE v_r.last END) o
                  WHERE o <> ALL (v_r.ords) ORDER BY o);
    -- A key cut short by the walk's end (its last key when it took p_want) may have more.
    idle := idle || ARRAY(SELECT v_tk[c.o] FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
                          WHERE c.n < v_tw[c.o] AND (cardinality(tids) < p_want OR c.o < v_r.last) ORDER BY c.o);
    SELECT coalesce(array_agg(v_tk[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_tp[c.o] ORDER BY c.o), '{}'),
           coalesce(array_agg(v_tw[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(c.n ORDER BY c.o), '{}')
    INTO v_more, v_pass, v_w, v_took
    FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
    WHERE c.n = v_tw[c.o];
    WHILE cardinality(tids) < p_want AND cardinality(v_more) > 0 LOOP
        -- Whole rounds of the keys left, at once: each takes its weight times m.
        v_m := greatest(1, (p_want - cardinality(tids)) / (SELECT sum(w) FROM unnest(v_w) w)::int);
        v_r := pgq._fair_round(p_slots, p_queue, p_prio, v_more, ARRAY(SELECT w * v_m FROM unnest(v_w) WITH ORDINALITY u(w, i) ORDER BY u.i),
                               p_want - cardinality(tids), p_now, p_skip || ids);
        tids := tids || v_r.tids; slots := slots || v_r.slots; ids := ids || v_r.ids; plain := plain || v_r.plain;
        keys := keys || ARRAY(SELECT v_more[u.o] FROM unnest(v_r.ords) WITH ORDINALITY u(o, i) ORDER BY u.i);
        tags := tags || ARRAY(SELECT v_pass[u.o] + (v_took[u.o] + u.n)::float8 / v_w[u.o]
                              FROM unnest(v_r.ords, v_r.nth) WITH ORDINALITY u(o, n, i) ORDER BY u.i);
        idle := idle || ARRAY(SELECT v_more[o] FROM generate_subscripts(v_more, 1) o
                              WHERE (SELECT count(*) FROM unnest(v_r.ords) u(x) WHERE u.x = o) < v_w[o] * v_m
                                AND (cardinality(tids) < p_want OR o < v_r.last) ORDER BY o);
        -- The keys that gave their whole quota go on, in their order.
        SELECT coalesce(array_agg(v_more[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_pass[c.o] ORDER BY c.o), '{}'),
               coalesce(array_agg(v_w[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_took[c.o] + c.n ORDER BY c.o), '{}')
        INTO v_more, v_pass, v_w, v_took
        FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
        WHERE c.n = v_w[c.o] * v_m;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._fair_rows(smallint[], text, int, int, timestamptz, bigint[]) IS
    'Reserve: the next ready rows of a fair queue at one priority, round-robin across its keys'' turns by pass and weight, locked (SKIP LOCKED), in the order to take them (S115-S117).';

-- pgq._fair_taken: notes, for pgq._fair_settle at the reserve's end, that this reserve
-- took jobs of the keys p_keys of p_queue (one element a job) and found none to take of
-- the keys p_idle. Kept in the transaction's setting pgq.fair_pending, as a jsonb
-- array of [queue, key, jobs].
CREATE OR REPLACE FUNCTION pgq._fair_taken(p_queue text, p_keys text[], p_idle text[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('pgq.fair_pending',
        (coalesce(nullif(current_setting('pgq.fair_pending', true), ''), '[]')::jsonb
         || coalesce((SELECT jsonb_agg(jsonb_build_array(p_queue, k.key, k.n))
                      FROM (SELECT u.key, count(*) AS n FROM unnest(p_keys) u(key) GROUP BY u.key
                            UNION ALL SELECT i.key, 0 FROM unnest(p_idle) i(key)) k), '[]'))::text,
        true);
END;
$$;

COMMENT ON FUNCTION pgq._fair_taken(text, text[], text[]) IS
    'Reserve: notes the jobs a pick of a fair queue took, by key, and its idle keys, for pgq._fair_settle (S115).';

-- pgq._fair_back: notes, for this reserve's walk and its end, the parked turns that
-- come back (pgq._pick_begin): p_back, [queue, key, ready at] each, or [queue, NULL]
-- for a queue whose parked turns are all checked at the reserve's end (a session's
-- first reserve on it). Returns p_cursor, so that it is an expression of the
-- reserve's, not a statement.
CREATE OR REPLACE FUNCTION pgq._fair_back(p_cursor jsonb, p_back jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_back IS NOT NULL AND p_back <> '[]' THEN
        PERFORM set_config('pgq.fair_back', p_back::text, true);
    END IF;
    RETURN p_cursor;
END;
$$;

COMMENT ON FUNCTION pgq._fair_back(jsonb, jsonb) IS
    'Reserve: notes the parked turns of fair queues that come back, for its walk and its end (S125).';

-- pgq._fair_settle: the turns after a reserve, from what its picks noted
-- (pgq._fair_taken) and the turns that came back (p_back, pgq._fair_back), locked in
-- one statement in (queue, key) order, so that reserves settling at the same time wait
-- for each other, never in a cycle: each key's pass advances by 1/weight a job taken
-- (from where a turn back from parking rejoins, S125); an idle key's turn ends when it
-- has no live job left (the module's comment says why no store is missed); one with
-- live jobs is parked until its first waiting job is ready (S125), or, when only a
-- store under way writes its jobs, keeps up with the lowest pass served in its queue
-- here, so that it banks no turns; a key whose last ready job this reserve took with
-- room for more (a walk left it dry, and a probe finds none ready now: a job another
-- reserve holds keeps it in play) is parked at once, as the next walk would find it
-- idle; a turn that came back and was not walked is parked no later than its job's
-- time, for every reserve to walk; of a queue noted whole, each parked turn whose key
-- has a job ready before its parking ends comes back then.
CREATE OR REPLACE FUNCTION pgq._fair_settle(p_pending jsonb, p_back jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- turns by key, never all of a queue's
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_tids  tid[];     -- the turns locked, in (queue, key) order
    v_q     text[]; v_k text[];
    v_n     bigint[];  -- jobs taken of the key; 0: idle; NULL: back, not walked
    v_dry   boolean[]; -- a walk left the key with no ready job (pgq._fair_rows' idle)
    v_pass  float8[];  -- as reserves order it (a turn back: where it rejoins, pgq._fair_rejoin)
    v_w     int[]; v_at timestamptz[];
    v_rejoin jsonb := (SELECT jsonb_object_agg(x.q, pgq._fair_rejoin(x.q))  -- per queue, once: where a turn back rejoins
                       FROM (SELECT DISTINCT p ->> 0 AS q FROM jsonb_array_elements(p_pending || p_back) p) x);
    v_front jsonb;     -- per queue, the lowest pass served
    v_was   boolean[]; -- parked before this reserve walked it
    v_alone tid[];     -- idle turns whose key's lock this reserve holds alone
    v_idle  tid[];
BEGIN
    SELECT array_agg(l.tid ORDER BY l.queue, l.key), array_agg(l.queue ORDER BY l.queue, l.key),
           array_agg(l.key ORDER BY l.queue, l.key), array_agg(l.n ORDER BY l.queue, l.key),
           array_agg(l.pass ORDER BY l.queue, l.key), array_agg(l.weight ORDER BY l.queue, l.key),
           array_agg(l.at ORDER BY l.queue, l.key), array_agg(l.was ORDER BY l.queue, l.key),
           array_agg(l.dry ORDER BY l.queue, l.key)
    INTO v_tids, v_q, v_k, v_n, v_pass, v_w, v_at, v_was, v_dry
    FROM (SELECT t.ctid AS tid, t.queue, t.key, e.n, e.dry,
                 CASE WHEN t.parked_until IS NULL THEN t.pass ELSE greatest(t.pass, (v_rejoin ->> t.queue)::float8) END AS pass,
                 coalesce(w.weight, 1) AS weight, e.at, t.parked_until IS NOT NULL AS was
          FROM (SELECT x.q, x.k, sum(x.n) AS n, min(x.at) AS at, coalesce(bool_or(x.n = 0), false) AS dry
                FROM (SELECT p ->> 0 AS q, p ->> 1 AS k, (p ->> 2)::int AS n, NULL::timestamptz AS at
                      FROM jsonb_array_elements(p_pending) p
                      UNION ALL
                      SELECT b ->> 0, b ->> 1, NULL, (b ->> 2)::timestamptz FROM jsonb_array_elements(p_back) b
                      WHERE b ->> 1 IS NOT NULL
                      UNION ALL
                      SELECT t.queue, t.key, NULL, r.at
                      FROM jsonb_array_elements(p_back) b
                      JOIN pgq.fair_turns t ON t.queue = b ->> 0 AND t.parked_until IS NOT NULL  -- fair_turns_parked_idx
                      CROSS JOIN LATERAL (SELECT coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity') AS at) r
                      WHERE b ->> 1 IS NULL AND r.at < t.parked_until) x
                GROUP BY x.q, x.k) e
          JOIN pgq.fair_turns t ON t.queue = e.q AND t.key = e.k
          LEFT JOIN pgq.fair_weights w ON w.queue = t.queue AND w.key = t.key
          WHERE e.n IS NOT NULL OR t.parked_until > e.at  -- a turn back, and not walked: only when parked later
          ORDER BY t.queue, t.key
          FOR UPDATE OF t) l;
    IF v_tids IS NULL THEN
        RETURN;
    END IF;
    -- Only the rows locked above, by TID: a turn made since by a store is left alone.
    SELECT jsonb_object_agg(f.q, f.pass) INTO v_front
    FROM (SELECT u.q, min(u.pass) AS pass FROM unnest(v_q, v_pass, v_n) u(q, pass, n) WHERE u.n > 0 GROUP BY u.q) f;
    UPDATE pgq.fair_turns t
    SET pass = CASE WHEN u.n > 0 THEN u.pass + u.n::float8 / u.w ELSE t.pass END,
        parked_until = CASE WHEN u.n > 0 AND u.dry  -- NULL when ready now; most often none waits: a probe, no call
                            THEN nullif(greatest(CASE WHEN NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key AND j.reserved_at IS NULL)
                                                      THEN 'infinity' ELSE coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity') END, now()), now())
                            WHEN u.n > 0 THEN NULL ELSE u.at END
    FROM unnest(v_tids, v_pass, v_n, v_w, v_at, v_dry) u(tid, pass, n, w, at, dry)
    WHERE t.ctid = ANY (v_tids) AND t.ctid = u.tid AND (u.n > 0 OR (u.n IS NULL AND t.parked_until > u.at));
    -- An idle key in play with no live job is kept, parked for pgq._fair_keep(): a key
    -- that dispatches again meanwhile comes back as a parked one, with no turn to make.
    -- A probe per turn, to the key's first job: a scalar subquery, which the planner
    -- never turns into a join that reads every job of the queue.
    v_idle := ARRAY(SELECT u.tid FROM unnest(v_tids, v_n) u(tid, n) WHERE u.n = 0);
    UPDATE pgq.fair_turns t SET parked_until = now() + pgq._fair_keep(), pass = u.pass
    FROM unnest(v_tids, v_pass, v_was) u(tid, pass, was)
    WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid AND NOT u.was
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NULL;
    -- An idle key back from parking: alone on its lock first; then, by a statement that
    -- starts after, no live job. A key seen with a live job (delayed, or running) keeps
    -- its turn without the lock being tried: held to the reserve's end, it would hold
    -- up every store of the keys that share it.
    v_alone := ARRAY(SELECT u.tid FROM unnest(v_tids, v_q, v_k, v_n, v_was) u(tid, q, k, n, was)
                     WHERE u.n = 0 AND u.was
                       AND CASE WHEN (SELECT j.id FROM pgq.jobs j WHERE j.queue = u.q AND j.fair_key = u.k LIMIT 1) IS NOT NULL
                                THEN false  -- a CASE: the planner orders the conditions of an AND by cost
                                ELSE pg_try_advisory_xact_lock(pgq._lock_space('fair'), pgq._fair_lock(u.q, u.k)) END);
    DELETE FROM pgq.fair_turns t
    WHERE t.ctid = ANY (v_alone)
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NULL;
    -- The other idle keys: parked at the pass they rejoined at when a live job is seen;
    -- else a store under way writes their jobs, and they keep up with the lowest pass
    -- served here.
    UPDATE pgq.fair_turns t
    SET parked_until = coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity'), pass = u.pass
    FROM unnest(v_tids, v_pass) u(tid, pass)
    WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NOT NULL;
    IF v_front IS NOT NULL THEN
        -- The rows just parked or deleted have no visible version at their old TIDs any
        -- more: only the idle turns left in play keep up.
        UPDATE pgq.fair_turns t SET pass = greatest(u.pass, (v_front ->> t.queue)::float8), parked_until = NULL
        FROM unnest(v_tids, v_pass) u(tid, pass)
        WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid;
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._fair_settle(jsonb, jsonb) IS
    'Reserve''s end: a fair queue''s turns after its picks: passes advance by 1/weight a job taken, idle keys with no live job lose their turn, those with live jobs are parked, turns that came back are due (S115, S117, S125).';

-- pgq._fair_keep: how long a fair queue's key keeps its turn, parked, once it has no
-- live job (S126): a key that dispatches again within it needs no new turn.
CREATE OR REPLACE FUNCTION pgq._fair_keep() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT interval '1 minute' $$;

COMMENT ON FUNCTION pgq._fair_keep() IS 'How long a fair queue''s key with no live job keeps its turn, parked: 1 minute (S126).';

-- pgq._fair_prune: the parked turns whose key has no live job left are kept for
-- pgq._fair_keep() (S126). A key parked while all its jobs ran is walked by no reserve
-- until one is written; this, called by pgq.rotate every second, parks its turn until
-- then, and the first reserve that walks it after, with still no live job, ends it as
-- an idle key's (see the top of this file). A turn a reserve is settling is left for a
-- later call.
CREATE OR REPLACE FUNCTION pgq._fair_prune() RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
AS $$
BEGIN
    UPDATE pgq.fair_turns t SET parked_until = now() + pgq._fair_keep()
    WHERE t.ctid = ANY (ARRAY(
        SELECT x.ctid FROM pgq.fair_turns x
        WHERE x.parked_until = 'infinity'  -- fair_turns_parked_idx: parked while all its jobs ran
          AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = x.queue AND j.fair_key = x.key LIMIT 1) IS NULL
        FOR UPDATE SKIP LOCKED));
END;
$$;

COMMENT ON FUNCTION pgq._fair_prune() IS
    'Parks for pgq._fair_keep() the turns of fair queues parked while their jobs ran, once no live job is left (S126); called by pgq.rotate.';
