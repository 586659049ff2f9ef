-- Storage, internal: the reserve's low-water marks (S77), where a worker's session
-- starts looking for waiting jobs, so that a reserve never walks the jobs already
-- finished. With a held xmin (an idle transaction, a long report, a replication slot)
-- vacuum removes no dead version, and jobs_reserve_idx keeps an entry for every job
-- reserved since the hold began: a reserve that starts at the front of its queue walks
-- them all, every call.
--
-- A reserve works with a cursor (jsonb): the session's marks, kept between its calls in
-- the setting pgq.reserve_marks (it lives as long as the session, and reverts with a
-- transaction that fails):
-- * queues -> queue -> p -> priority: a position [available_at, id] below which no
--   waiting job of that queue and priority was visible to the session's last reserve;
-- * queues -> queue -> l: the time below which its last reserve swept every expired
--   lease;
-- * since: the snapshot of the last reserve (xmax and the transactions in progress).
-- A job becomes waiting, or gets or renews its lease, only in a row version whose txid
-- names the top-level transaction that wrote it (column default, trigger, take). So a
-- row below a mark that the last reserve could not see was written by a transaction
-- that snapshot did not see: txid >= xmax or txid among the in-progress ones. The next
-- reserve finds exactly those through jobs_txid_idx (few: what was written since) and
-- lowers the marks to them; the transactions still in progress then are in its own
-- snapshot, and so in the call after it. A session's first reserve on a queue (and one
-- whose queue list changed) walks the queue from its front.
--
-- The reserve calls, in order: pgq._pick_begin, pgq._sweep_from / pgq._pick_lower /
-- pgq._pick_swept around its lease sweep, pgq._pick (29_storage.sql) and pgq._pick_done
-- for each queue, and pgq._pick_end.

-- pgq._stamp_txid: the trigger that stamps txid on every update leaving a job waiting
-- (released, backed off, turned away, given back, expired, run now, cancel requested),
-- or renewing its lease (heartbeat): such a row may now lie below a session's mark.
CREATE OR REPLACE FUNCTION pgq._stamp_txid() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.txid := pg_current_xact_id();
    RETURN NEW;
END;
$$;

COMMENT ON FUNCTION pgq._stamp_txid() IS
    'Trigger: stamps pgq.jobs.txid on an update that leaves the job waiting or renews its lease, for the low-water marks of pgq.reserve (S77).';

-- A take (pgq._take_rows) makes waiting rows reserved and stamps txid itself: the WHEN
-- keeps the trigger off the hot path.
CREATE OR REPLACE TRIGGER jobs_stamp_txid BEFORE UPDATE ON pgq.jobs
    FOR EACH ROW
    WHEN (NEW.reserved_at IS NULL
          OR (OLD.reserved_at IS NOT NULL AND NEW.reserved_until IS DISTINCT FROM OLD.reserved_until))
    EXECUTE FUNCTION pgq._stamp_txid();

-- pgq._pick_lower: the cursor with the mark of (queue, priority) lowered to (at, id), or
-- set when the queue has marks but none for that priority. A queue without marks
-- (walked from its front at its next pick) is left so.
CREATE OR REPLACE FUNCTION pgq._pick_lower(p_cursor jsonb, p_queue text, p_priority int, p_at timestamptz, p_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_mark jsonb := p_cursor -> 'queues' -> p_queue -> 'p' -> (p_priority::text);
BEGIN
    IF p_cursor -> 'queues' -> p_queue -> 'p' IS NULL THEN
        RETURN p_cursor;
    END IF;
    IF v_mark IS NULL OR (p_at, p_id) < ((v_mark ->> 0)::timestamptz, (v_mark ->> 1)::bigint) THEN
        RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue, 'p', p_priority::text], jsonb_build_array(p_at, p_id));
    END IF;
    RETURN p_cursor;
END;
$$;

COMMENT ON FUNCTION pgq._pick_lower(jsonb, text, int, timestamptz, bigint) IS
    'Reserve''s cursor with the mark of (queue, priority) lowered to (at, id): such a job became waiting below it (S77).';

-- pgq._pick_begin: the cursor of a reserve on these queues: the session's marks for
-- them (the others are dropped: the rows written to them from now on will not be
-- looked at), lowered to every row written since the session's last reserve by a
-- transaction its snapshot did not see, with this call's snapshot. No marks on a
-- session's first call. No sequential scan: the rows are few and jobs_txid_idx finds
-- them, whatever the statistics say (none, on a server without autovacuum); a generic
-- plan, so that no reserve pays for planning.
CREATE OR REPLACE FUNCTION pgq._pick_begin(p_queues text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    v_state  jsonb := nullif(current_setting('pgq.reserve_marks', true), '')::jsonb;
    v_snap   pg_snapshot := pg_current_snapshot();
    v_cursor jsonb;
    v_xmax   xid8;
    v_xip    xid8[];
    r        record;
BEGIN
    v_cursor := jsonb_build_object(
        'queues', (SELECT coalesce(jsonb_object_agg(q.key, q.value), '{}') FROM jsonb_each(v_state -> 'queues') q
                   WHERE q.key = ANY (p_queues)),
        'since', jsonb_build_object('xmax', pg_snapshot_xmax(v_snap)::text,
                                    'xip', (SELECT coalesce(jsonb_agg(x::text), '[]') FROM pg_snapshot_xip(v_snap) x)));
    IF v_cursor -> 'queues' = '{}' THEN
        RETURN v_cursor;
    END IF;
    v_xmax := (v_state -> 'since' ->> 'xmax')::xid8;
    v_xip := ARRAY(SELECT x::xid8 FROM jsonb_array_elements_text(v_state -> 'since' -> 'xip') x);
    -- Materialized: both aggregates read the rows found through jobs_txid_idx, never
    -- another index of pgq.jobs (jobs_lease_idx would walk every lease, dead or alive).
    FOR r IN
        WITH written AS MATERIALIZED (
            SELECT j.queue, j.priority, j.available_at, j.id, j.reserved_at, j.reserved_until
            FROM pgq.jobs j
            WHERE (j.txid >= v_xmax OR j.txid = ANY (v_xip))
              AND j.queue = ANY (p_queues)
        )
        (SELECT DISTINCT ON (w.queue, w.priority) w.queue, w.priority, w.available_at, w.id, NULL::timestamptz AS until
         FROM written w
         WHERE w.reserved_at IS NULL
         ORDER BY w.queue, w.priority, w.available_at, w.id)
        UNION ALL
        SELECT w.queue, NULL, NULL, NULL, min(w.reserved_until)
        FROM written w
        WHERE w.reserved_until IS NOT NULL
        GROUP BY w.queue
    LOOP
        IF r.until IS NULL THEN
            v_cursor := pgq._pick_lower(v_cursor, r.queue, r.priority, r.available_at, r.id);
        ELSIF (v_cursor -> 'queues' -> r.queue ->> 'l')::timestamptz > r.until THEN
            v_cursor := jsonb_set(v_cursor, ARRAY['queues', r.queue, 'l'], to_jsonb(r.until));
        END IF;
    END LOOP;
    RETURN v_cursor;
END;
$$;

COMMENT ON FUNCTION pgq._pick_begin(text[]) IS
    'Reserve''s cursor: this session''s marks for these queues, lowered to the rows written since its last reserve by transactions it did not see, with this call''s snapshot (S77).';

-- pgq._sweep_from: where the lease sweep of a reserve on these queues starts: the
-- earliest time below which the session's last reserve swept every expired lease of
-- each queue; -infinity when one of them has none (or one in the future, p_now being a
-- test's clock).
CREATE OR REPLACE FUNCTION pgq._sweep_from(p_cursor jsonb, p_queues text[], p_now timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_low timestamptz;
BEGIN
    SELECT CASE WHEN bool_and(p_cursor -> 'queues' -> q ->> 'l' IS NOT NULL)
                THEN min((p_cursor -> 'queues' -> q ->> 'l')::timestamptz) END
    INTO v_low
    FROM unnest(p_queues) q;
    RETURN CASE WHEN v_low IS NULL OR v_low > p_now THEN '-infinity' ELSE v_low END;
END;
$$;

COMMENT ON FUNCTION pgq._sweep_from(jsonb, text[], timestamptz) IS
    'Where a reserve''s lease sweep starts: below it, the session''s last reserve swept every expired lease of these queues (S77).';

-- pgq._pick_swept: the cursor after a sweep from p_low at p_now: every lease of these
-- queues that ended before p_now, and was not left locked by another transaction (or
-- beyond the sweep's limit), came back; the next sweep starts at the first one left.
CREATE OR REPLACE FUNCTION pgq._pick_swept(p_cursor jsonb, p_queues text[], p_low timestamptz, p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    RETURN jsonb_set(p_cursor, '{queues}', coalesce((
        SELECT jsonb_object_agg(q.name, jsonb_set(coalesce(p_cursor -> 'queues' -> q.name, '{}'), '{l}',
                                                  to_jsonb(coalesce(l.until, p_now))))
        FROM unnest(p_queues) q(name)
        LEFT JOIN (SELECT j.queue, min(j.reserved_until) AS until
                   FROM pgq.jobs j
                   WHERE j.reserved_until < p_now
                     AND j.reserved_until >= p_low
                     AND j.queue = ANY (p_queues)
                   GROUP BY j.queue) l ON l.queue = q.name), '{}'));
END;
$$;

COMMENT ON FUNCTION pgq._pick_swept(jsonb, text[], timestamptz, timestamptz) IS
    'Reserve''s cursor after its lease sweep: the next sweep of each queue starts at the first expired lease left (S77).';

-- pgq._pick_done: the cursor once a reserve is done with a queue: its marks move up to
-- its first waiting job of each priority, locked by another reserve or not (that
-- reserve may roll back). The first time, by walking the queue; then from the marks,
-- and a priority with no waiting job left is dropped (a new one comes back through
-- pgq._pick_begin).
CREATE OR REPLACE FUNCTION pgq._pick_done(p_cursor jsonb, p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
AS $$
DECLARE
    v_qm jsonb := coalesce(p_cursor -> 'queues' -> p_queue, '{}');
BEGIN
    IF v_qm -> 'p' IS NULL THEN
        v_qm := jsonb_set(v_qm, '{p}', coalesce((
            SELECT jsonb_object_agg(f.priority, jsonb_build_array(f.available_at, f.id))
            FROM (SELECT DISTINCT ON (p.priority) p.priority, p.available_at, p.id
                  FROM pgq.jobs p
                  WHERE p.queue = p_queue AND p.reserved_at IS NULL
                  ORDER BY p.priority DESC, p.available_at, p.id) f), '{}'));
    ELSE
        v_qm := jsonb_set(v_qm, '{p}', coalesce((
            SELECT jsonb_object_agg(m.key, jsonb_build_array(f.available_at, f.id))
            FROM jsonb_each(v_qm -> 'p') m
            CROSS JOIN LATERAL (
                SELECT p.available_at, p.id
                FROM pgq.jobs p
                WHERE p.queue = p_queue
                  AND p.priority = m.key::int
                  AND p.reserved_at IS NULL
                  AND (p.available_at, p.id) >= ((m.value ->> 0)::timestamptz, (m.value ->> 1)::bigint)
                ORDER BY p.available_at, p.id
                LIMIT 1) f), '{}'));
    END IF;
    RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue], v_qm);
END;
$$;

COMMENT ON FUNCTION pgq._pick_done(jsonb, text) IS
    'Reserve''s cursor once a queue is done: its marks move up to its first waiting job of each priority (S77).';

-- pgq._pick_end: keeps the cursor's marks for the session's next reserve, with the
-- snapshot they hold for. The transaction's own id is added to the in-progress list:
-- its rows written after this call (a reserve inside a longer transaction) are looked
-- at next time.
CREATE OR REPLACE FUNCTION pgq._pick_end(p_cursor jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('pgq.reserve_marks', jsonb_set(p_cursor, '{since,xip}',
        (p_cursor -> 'since' -> 'xip') || coalesce(to_jsonb(pg_current_xact_id_if_assigned()::text), '[]'))::text, false);
END;
$$;

COMMENT ON FUNCTION pgq._pick_end(jsonb) IS
    'Reserve''s cursor: keeps its marks in the session (setting pgq.reserve_marks) with the snapshot they hold for (S77).';
