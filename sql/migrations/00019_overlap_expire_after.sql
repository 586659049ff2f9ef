-- A running job tells its worker how long its overlap leases need renewing (S34).
--
-- * pgq.reservation.overlap_expire_after: for a job reserve hands over to run, the
--   largest expire_after of the overlap keys it took, in seconds, when each of them has
--   one; NULL when one has none, or when it took no key. Such a lease ends that long
--   after the reservation however often it is renewed (S27). So once a renewal can no
--   longer move its end, the worker need not renew it, and a renewal that fails cannot
--   cost the handler its key: the worker keeps it running, rather than cancelling a
--   handler whose keys the contract had already given up.
-- * pgq.admission.held_expire_after: the same, as pgq._admit decides it, where the keys'
--   settings are at hand (a lookup of the leases per job afterwards would cost the
--   without_overlapping drain much of its rate).
-- * Both types gain a column, so they are made again; the functions that name them are
--   dropped here and made again by sql/functions on the same migrate, and their grants
--   by privileges.sql.

-- +goose Up
DROP FUNCTION IF EXISTS pgq.reserve(text, text[], int, int, timestamptz, uuid);
DROP FUNCTION IF EXISTS pgq._reported(pgq.jobs, pgq.pickup, text, text);
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
DROP TYPE IF EXISTS pgq.reservation;
DROP TYPE IF EXISTS pgq.admission;
CREATE TYPE pgq.reservation AS (
    uuid                 uuid,
    job                  text,
    queue                text,
    payload              jsonb,
    priority             int,
    attempts             int,
    tries                int,
    handler              text,
    timeout              int,
    lease_token          uuid,
    reserved_at          timestamptz,
    reserved_until       timestamptz,
    overlap_keys         text[],
    dispatched_at        timestamptz,
    pickup               pgq.pickup,
    pickup_note          text,
    pickup_middleware    text,
    overlap_expire_after int
);
COMMENT ON TYPE pgq.reservation IS 'A row of pgq.reserve: a job to run (pickup NULL) with its lease and, when each overlap key it took has an expire_after, the largest (overlap_expire_after, seconds); or a job reserve handled at pickup (pickup says how, pickup_note why).';
CREATE TYPE pgq.admission AS (
    ord               int,      -- the job's position in the batch given to pgq._admit (1-based)
    turned_by         text,     -- the middleware that turned it away, NULL when admitted
    note              text,     -- why, for the attempt record
    delay             int,      -- seconds until the job is due again (turned away)
    drop              boolean,  -- dont_release: delete instead of release
    held              text[],   -- overlap keys now leased to it (admitted only)
    error             text,     -- a middleware could not be evaluated: fail the job
    held_expire_after int       -- the largest expire_after of the held keys, when each has one
);
COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased, and the largest of their expire_after when each has one), turned away, or failed.';

-- +goose Down
DROP FUNCTION IF EXISTS pgq.reserve(text, text[], int, int, timestamptz, uuid);
DROP FUNCTION IF EXISTS pgq._reported(pgq.jobs, pgq.pickup, text, text);
DROP FUNCTION IF EXISTS pgq._admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamptz);
DROP TYPE IF EXISTS pgq.reservation;
DROP TYPE IF EXISTS pgq.admission;
CREATE TYPE pgq.reservation AS (
    uuid              uuid,
    job               text,
    queue             text,
    payload           jsonb,
    priority          int,
    attempts          int,
    tries             int,
    handler           text,
    timeout           int,
    lease_token       uuid,
    reserved_at       timestamptz,
    reserved_until    timestamptz,
    overlap_keys      text[],
    dispatched_at     timestamptz,
    pickup            pgq.pickup,
    pickup_note       text,
    pickup_middleware text
);
COMMENT ON TYPE pgq.reservation IS 'A row of pgq.reserve: a job to run (pickup NULL) with its lease, or a job reserve handled at pickup (pickup says how, pickup_note why).';
CREATE TYPE pgq.admission AS (
    ord       int,
    turned_by text,
    note      text,
    delay     int,
    drop      boolean,
    held      text[],
    error     text
);
COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased), turned away, or failed.';
