-- Storage under pressure (issue 19).
--
-- * pgq.admission: what pgq._admit decides for one job of a reserve batch. pgq._admit
--   now takes the batch (as arrays: names, payloads, middleware, uuids, lease tokens) and runs the middleware
--   set-based, one statement per middleware kind and position instead of one call per
--   job: no subtransaction and no per-job round of statements (S67).
-- * Dropped: pgq._admit(pgq.jobs, timestamptz) and pgq._take_overlap, the per-job forms.

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

DROP FUNCTION IF EXISTS pgq._admit(pgq.jobs, timestamptz);
DROP FUNCTION IF EXISTS pgq._take_overlap(text, pgq.jobs, timestamptz, int);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
DROP TYPE IF EXISTS pgq.admission;
