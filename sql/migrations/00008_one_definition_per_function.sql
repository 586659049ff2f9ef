-- From this version on, migrations hold DDL only: every function, view and trigger has
-- one definition under sql/functions/, applied after the migrations on every migrate.
-- This migration moves an installation at version 7 onto that layout:
--
-- * pgq.reservations and pgq.check_findings, always-empty views that served as row
--   types, become the composite types pgq.reservation and pgq.check_finding. The
--   functions returning them are dropped here and created again by sql/functions/.
--   pgq.reserve now returns only what a worker reads, and pgq.pickup names the pickup
--   outcomes once.
-- * The default of pgq.jobs.uuid goes back to gen_random_uuid(): a table default that
--   calls one of pgq's functions would tie the table to that function's definition.
--   pgq.dispatch_many gives every job a version 7 uuid itself.
--
-- IF EXISTS: a new installation (00007_baseline.sql) has none of these functions yet.

-- +goose Up
DROP FUNCTION IF EXISTS pgq.reserve(text, text[], int, int, timestamptz);
DROP FUNCTION IF EXISTS pgq._reported(pgq.jobs, text, text, text);
DROP VIEW IF EXISTS pgq.reservations;
DROP FUNCTION IF EXISTS pgq.check(int, int);
DROP VIEW IF EXISTS pgq.check_findings;

CREATE TYPE pgq.pickup AS ENUM ('turned_away', 'exhausted', 'debounced', 'failed');

COMMENT ON TYPE pgq.pickup IS 'What pgq.reserve did with a job it will not hand over: turned away by middleware, exhausted (S12), debounced (S24), or failed because its middleware could not be evaluated.';

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

CREATE TYPE pgq.check_finding AS (object text, rule text, detail text, fix text);

COMMENT ON TYPE pgq.check_finding IS 'A row of pgq.check: one problem (object, rule, detail, fix).';

ALTER TABLE pgq.jobs ALTER COLUMN uuid SET DEFAULT gen_random_uuid();
COMMENT ON COLUMN pgq.jobs.uuid IS 'The job''s identity. pgq.dispatch_many gives each job a time-ordered (version 7) uuid, so new entries land at the right edge of the indexes keyed by it.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 8 cannot be undone: the functions of version 7 lived in its migrations; restore a backup instead'
        USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
