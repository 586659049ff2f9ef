-- The search_path a SQL handler runs with when its function pins none of its own (S86).
-- pgq.define_job records it for the handler it names: the schemas of the defining
-- admin's search_path at that moment, without pg_temp, pgq and pg_catalog (which come
-- first and last anyway). pgq.run_sql_job applies it around the call; a function that
-- pins its own search_path (ALTER FUNCTION … SET search_path) overrides it on entry, as
-- any function's own setting does. One row per handler function: the last definition
-- that names it decides, for every class that names it.

-- +goose Up
CREATE TABLE pgq.handler_search_paths (
    handler     regprocedure PRIMARY KEY,
    search_path text NOT NULL,
    defined_by  text NOT NULL DEFAULT session_user,
    defined_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgq.handler_search_paths IS
    'The search_path each SQL handler that pins none of its own runs with: its admin''s when pgq.define_job named it (S86).';

-- _define_job takes the path to record; _sql_job returns it to pgq.run_sql_job.
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb);
DROP FUNCTION IF EXISTS pgq._sql_job(uuid, uuid);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, text);
DROP FUNCTION IF EXISTS pgq._sql_job(uuid, uuid);
DROP TABLE pgq.handler_search_paths;
