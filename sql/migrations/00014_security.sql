-- Least privilege.
--
-- * pgq.roles names the roles pgq grants to (pgq.Migrate writes it; their names can be
--   given a prefix). Roles, ownership and grants themselves are applied by pgq.Migrate
--   after the functions, on every migrate (sql/privileges.sql): roles are cluster-wide
--   and their names are pgq.Migrate's options, which a migration file cannot take.
-- * A job's SQL handler is stored as the function itself (regprocedure), resolved when
--   an admin defines the job class, not as a name looked up when the job runs. An
--   existing name is resolved as it would have been (jsonb argument, the migrator's
--   search_path); one whose function no longer exists becomes NULL, and its job then
--   fails as a job with no handler. Rewrites pgq.jobs: migrate with few jobs waiting.
-- * Dropped: functions whose signature changed (pgq.give_back takes started) or that
--   are gone (pgq._uuid7, replaced by pgq._uuid7s).

-- +goose Up
CREATE TABLE pgq.roles (
    kind text PRIMARY KEY CHECK (kind IN ('owner', 'producer', 'worker', 'reader', 'payload_reader', 'admin')),
    name text NOT NULL
);
COMMENT ON TABLE pgq.roles IS 'The roles pgq grants to, by kind (pgq.Migrate writes them): owner, producer, worker, reader, payload_reader, admin.';

ALTER TABLE pgq.job_classes ALTER COLUMN handler TYPE regprocedure USING to_regprocedure(handler || '(jsonb)');
ALTER TABLE pgq.jobs ALTER COLUMN handler TYPE regprocedure USING to_regprocedure(handler || '(jsonb)');
ALTER TABLE pgq.failed_jobs ALTER COLUMN handler TYPE regprocedure USING to_regprocedure(handler || '(jsonb)');

DROP FUNCTION IF EXISTS pgq.give_back(uuid[], uuid[], text, timestamptz);
DROP FUNCTION IF EXISTS pgq._uuid7();

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 14 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
