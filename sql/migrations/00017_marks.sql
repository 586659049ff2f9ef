-- Reserve from a low-water mark: a reserve must not walk the jobs that are
-- already finished, whose dead versions a held xmin keeps in jobs_reserve_idx.
--
-- * pgq.jobs.txid: the top-level transaction that last made the row waiting, or set
--   its lease (insert: the column default; reserve and heartbeat: set explicitly; any
--   other update that leaves the row waiting: the trigger pgq._stamp_txid). A worker's
--   session keeps, between its reserve calls, a mark per queue and priority below which
--   no waiting job was visible, and the snapshot it was taken under; the rows written by
--   transactions that snapshot did not see are found through jobs_txid_idx, and lower
--   the marks (see pgq._marks_since). NULL for rows written before this migration:
--   a session's first reserve on a queue walks the queue once and sees them.
-- * jobs_txid_idx: those rows, found by range (txid >= the snapshot's xmax) and by list
--   (txid = ANY its in-progress list), whatever the xmin horizon.

-- +goose Up
ALTER TABLE pgq.jobs ADD COLUMN txid xid8;
ALTER TABLE pgq.jobs ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
COMMENT ON COLUMN pgq.jobs.txid IS 'The top-level transaction that last made the job waiting or set its lease: what reserve''s low-water marks catch up on (pgq._marks_since). NULL before migration 00017.';
CREATE INDEX jobs_txid_idx ON pgq.jobs (txid);

-- +goose Down
DROP TRIGGER IF EXISTS jobs_stamp_txid ON pgq.jobs;
DROP FUNCTION IF EXISTS pgq._stamp_txid();
DROP INDEX IF EXISTS pgq.jobs_txid_idx;
ALTER TABLE pgq.jobs DROP COLUMN IF EXISTS txid;
