-- Rate-limit windows are taken behind advisory locks, so that two reserves cannot
-- deadlock on them (S82).
--
-- pgq._admit locked the windows a batch needs with an upsert, in (limit, key) order
-- within one call. But one pgq.reserve runs pgq._admit many times (once per pass, and
-- once per job on its one-by-one path), in pick order, not key order: a reserve of jobs
-- of keys a then b and another of b then a deadlocked (sql/windows_test.go, 63 times in
-- two minutes before this change). Now a reserve waits for windows only in the first
-- pgq._admit of its transaction that needs any, and in (limit, key) order; once it holds
-- one, it takes a window only when its lock is free right now, and leaves the jobs of a
-- busy window waiting, untouched, for a later reserve.
--
-- * pgq.admission.busy: pgq._admit left the job waiting (its window is busy): no
--   attempt used, nothing recorded. The type gains a column, so it is made again;
--   pgq._admit, which returns it, is dropped here and made again by sql/functions on
--   the same migrate.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
DROP TYPE IF EXISTS pgq.admission;
CREATE TYPE pgq.admission AS (
    ord               int,      -- the job's position in the batch given to pgq._admit (1-based)
    turned_by         text,     -- the middleware that turned it away (or left it waiting), NULL when admitted
    note              text,     -- why, for the attempt record
    delay             int,      -- seconds until the job is due again (turned away)
    drop              boolean,  -- dont_release: delete instead of release
    held              text[],   -- overlap keys now leased to it (admitted only)
    error             text,     -- a middleware could not be evaluated: fail the job
    held_expire_after int,      -- the largest expire_after of the held keys, when each has one
    busy              boolean   -- its rate-limit window is locked by another transaction: leave it waiting (S82)
);
COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased, and the largest of their expire_after when each has one), turned away, failed, or left waiting (busy: its rate-limit window is locked by another transaction).';

-- +goose Down
DROP FUNCTION IF EXISTS pgq.reserve(text, text[], int, int, timestamptz, uuid);
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
DROP TYPE IF EXISTS pgq.admission;
CREATE TYPE pgq.admission AS (
    ord               int,
    turned_by         text,
    note              text,
    delay             int,
    drop              boolean,
    held              text[],
    error             text,
    held_expire_after int
);
COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased, and the largest of their expire_after when each has one), turned away, or failed.';
