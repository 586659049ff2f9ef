-- pgq._as_reserved takes a reserve's batch in one call (sql/functions/40_outcomes.sql);
-- the one-job form goes.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._as_reserved(pgq.jobs, timestamptz, int, text, uuid);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._as_reserved(pgq.jobs[], int[], uuid[], timestamptz, int, text);
