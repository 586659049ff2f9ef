-- Storage: reserve's low-water marks (S77): where a worker's session starts looking for
-- waiting jobs, so that a reserve never walks the jobs already finished. With a held
-- xmin (an idle transaction, a long report, a replication slot) vacuum removes no dead
-- version, and jobs_reserve_idx keeps an entry for every job reserved since the hold
-- began: a reserve that starts at the front of its queue walks them all, every call.
--
-- A session keeps, in the setting pgq.reserve_marks (it lives as long as the session,
-- and reverts with a transaction that fails):
-- * per queue and priority, a position (available_at, id) below which no waiting job of
--   that queue and priority was visible to its last reserve;
-- * per queue, the time (l) below which its last reserve swept every expired lease;
-- * the snapshot of its last reserve (since): xmax and the transactions in progress.
-- A job becomes waiting, or gets its lease, only in a row version whose txid names the
-- top-level transaction that wrote it (column default, trigger, reserve, heartbeat). So
-- a row below a mark that the last reserve could not see was written by a transaction
-- that snapshot did not see: txid >= xmax or txid among the in-progress ones. The next
-- reserve finds exactly those through jobs_txid_idx (few: what was written since) and
-- lowers the marks to them; the transactions still in progress then are in its own
-- snapshot, and so in the call after it. A session's first reserve on a queue (and one
-- whose queue list changed) walks the queue once, as every reserve did before.

-- pgq._stamp_txid: the trigger that stamps txid on every update leaving a job waiting
-- (released, backed off, turned away, given back, expired, moved, run now, cancel
-- requested): such a row may now lie below a session's mark.
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
    'Trigger: stamps pgq.jobs.txid on an update that leaves the job waiting, for the low-water marks of pgq.reserve.';

-- Reserve's own updates set reserved_at, and set txid themselves: the WHEN keeps the
-- trigger off the hot path.
CREATE OR REPLACE TRIGGER jobs_stamp_txid BEFORE UPDATE ON pgq.jobs
    FOR EACH ROW WHEN (NEW.reserved_at IS NULL) EXECUTE FUNCTION pgq._stamp_txid();

-- pgq._marks_lower: marks with the mark of (queue, priority) lowered to (at, id), or set
-- when the queue has marks but none for that priority. A queue without marks (walked
-- whole at its next pickup) is left so.
CREATE OR REPLACE FUNCTION pgq._marks_lower(p_marks jsonb, p_queue text, p_priority int, p_at timestamptz, p_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN CASE
        WHEN p_marks -> p_queue -> 'p' IS NULL THEN p_marks
        WHEN p_marks -> p_queue -> 'p' -> (p_priority::text) IS NULL
             OR (p_at, p_id) < ((p_marks -> p_queue -> 'p' -> (p_priority::text) ->> 0)::timestamptz,
                                (p_marks -> p_queue -> 'p' -> (p_priority::text) ->> 1)::bigint)
        THEN jsonb_set(p_marks, ARRAY[p_queue, 'p', p_priority::text], jsonb_build_array(p_at, p_id))
        ELSE p_marks
    END;
END;
$$;

COMMENT ON FUNCTION pgq._marks_lower(jsonb, text, int, timestamptz, bigint) IS
    'Reserve''s low-water marks: the mark of (queue, priority) lowered to (at, id).';

-- pgq._marks_since: the session's marks for these queues (the others are dropped: the
-- rows written to them from now on will not be looked at), lowered to every row written
-- since the session's last reserve by a transaction its snapshot did not see; and the
-- snapshot of this call, to be kept by pgq._marks_keep. Empty on a session's first call.
-- No sequential scan: the rows are few and jobs_txid_idx finds them, whatever the
-- statistics say (none, on a server without autovacuum); a generic plan, so that no
-- reserve pays for planning.
CREATE OR REPLACE FUNCTION pgq._marks_since(p_queues text[], OUT marks jsonb, OUT snap pg_snapshot)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    v_state jsonb := nullif(current_setting('pgq.reserve_marks', true), '')::jsonb;
    v_xmax  xid8;
    v_xip   xid8[];
    r       record;
BEGIN
    snap := pg_current_snapshot();
    SELECT coalesce(jsonb_object_agg(q.key, q.value), '{}') INTO marks
    FROM jsonb_each(v_state -> 'queues') q
    WHERE q.key = ANY (p_queues);
    IF marks = '{}' THEN
        RETURN;
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
            marks := pgq._marks_lower(marks, r.queue, r.priority, r.available_at, r.id);
        ELSIF (marks -> r.queue ->> 'l')::timestamptz > r.until THEN
            marks := jsonb_set(marks, ARRAY[r.queue, 'l'], to_jsonb(r.until));
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._marks_since(text[]) IS
    'Reserve''s low-water marks: this session''s marks for these queues, lowered to the rows written since its last reserve by transactions it did not see; and this call''s snapshot.';

-- pgq._marks_keep: keeps marks for the session's next reserve, with the snapshot they
-- hold for. The transaction's own id is added to the in-progress list: its rows written
-- after this call (a reserve inside a longer transaction) are looked at next time.
CREATE OR REPLACE FUNCTION pgq._marks_keep(p_marks jsonb, p_snap pg_snapshot) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM set_config('pgq.reserve_marks', jsonb_build_object(
        'since', jsonb_build_object(
            'xmax', pg_snapshot_xmax(p_snap)::text,
            'xip', (SELECT coalesce(jsonb_agg(x::text), '[]')
                    FROM (SELECT pg_snapshot_xip(p_snap) AS x
                          UNION ALL
                          SELECT pg_current_xact_id_if_assigned()) s
                    WHERE x IS NOT NULL)),
        'queues', p_marks)::text, false);
END;
$$;

COMMENT ON FUNCTION pgq._marks_keep(jsonb, pg_snapshot) IS
    'Reserve''s low-water marks: keeps them in the session (setting pgq.reserve_marks) with the snapshot they hold for.';
