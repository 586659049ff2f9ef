-- Storage under pressure.
--
-- * pgq.admission: what pgq._admit decides for one job of a reserve batch. pgq._admit
--   now takes the batch (as arrays: names, payloads, middleware, uuids, lease tokens) and runs the middleware
--   set-based, one statement per middleware kind and position instead of one call per
--   job: no subtransaction and no per-job round of statements (S67).
-- * pgq.jobs.middleware_keys: the key of each middleware of the job, computed once at
--   dispatch (which must compute them anyway, to check them: S38), so that reserve does
--   not compute them again for every pickup. NULL for jobs dispatched before this
--   migration or re-queued by an operation; reserve computes those.
-- * Dropped: pgq._admit(pgq.jobs, timestamptz) and pgq._take_overlap, the per-job forms;
--   pgq._check_middleware_keys, which now also returns the keys.

-- +goose Up
CREATE TYPE pgq.admission AS (
    ord       int,      -- the job's position in the batch given to pgq._admit (1-based)
    turned_by text,     -- the middleware that turned it away, NULL when admitted
    note      text,     -- why, for the attempt record
    delay     int,      -- seconds until the job is due again (turned away)
    drop      boolean,  -- dont_release: delete instead of release
    held      text[],   -- overlap keys now leased to it (admitted only)
    error     text      -- a middleware could not be evaluated: fail the job
);
COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased), turned away, or failed.';

ALTER TABLE pgq.jobs ADD COLUMN middleware_keys jsonb;
COMMENT ON COLUMN pgq.jobs.middleware_keys IS 'The key of each middleware (a JSON array of strings, by position), computed at dispatch; NULL when not computed yet (reserve computes it).';

DROP FUNCTION IF EXISTS pgq._admit(pgq.jobs, timestamptz);
DROP FUNCTION IF EXISTS pgq._check_middleware_keys(text, jsonb, jsonb[]);
DROP FUNCTION IF EXISTS pgq._take_overlap(text, pgq.jobs, timestamptz, int);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
ALTER TABLE pgq.jobs DROP COLUMN IF EXISTS middleware_keys;
DROP TYPE IF EXISTS pgq.admission;
