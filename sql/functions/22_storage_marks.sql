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
-- * queues -> queue -> p: the marks, [priority, available_at, id] each, highest
--   priority first: no waiting job of that queue and priority below (available_at, id)
--   was visible to the session's last reserve;
-- * queues -> queue -> l: the time below which its last reserve swept every expired
--   lease;
-- * since: the snapshot of the last reserve (xmax, and xip: the transactions in
--   progress, comma-separated);
-- * layout: 2, this layout; marks kept in another are dropped.
-- The cursor's functions work on it with expressions, one statement each at most where
-- they must read pgq.jobs: a statement costs a reserve far more than an expression.
-- A job becomes waiting, or gets or renews its lease, only in a row version whose txid
-- names the top-level transaction that wrote it (column default, trigger, take). So a
-- row below a mark that the last reserve could not see was written by a transaction
-- that snapshot did not see: txid >= xmax or txid among the in-progress ones. The next
-- reserve finds exactly those through jobs_txid_idx (few: what was written since) and
-- lowers the marks to them; the transactions still in progress then are in its own
-- snapshot, and so in the call after it. A session's first reserve on a queue (and one
-- whose queue list changed) walks the queue from its front.
--
-- The cursor's operations are the boundary's (29_storage.sql): the reserve calls
-- pgq._pick_begin, pgq._sweep_from, pgq._pick_lower and pgq._pick_swept around its
-- lease sweep, pgq._pick and pgq._pick_done for each queue, and pgq._pick_end.

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

