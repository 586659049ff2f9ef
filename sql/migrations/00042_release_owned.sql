-- A job's unique lock and debounce token are released by one set-based function,
-- pgq._release_owned (sql/functions/30_unique_debounce.sql), for one job or for a
-- completion's batch; the single-key functions it replaces go.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._release_unique(text, uuid);
DROP FUNCTION IF EXISTS pgq._release_debounce(text, uuid);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._release_owned(text[], uuid[], text[], uuid[]);
DROP FUNCTION IF EXISTS pgq._clear_circuits(text[], jsonb[], jsonb[]);
