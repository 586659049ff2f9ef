-- pgq._check_dispatch_limits checks every option a dispatch may not choose, the delay,
-- retry_for and the payloads' presence included: its old signature is dropped here and
-- made again by sql/functions on the same migrate.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._check_dispatch_limits(int, int, jsonb[]);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._check_dispatch_limits(int, int, jsonb[], interval, timestamptz, interval);
DROP FUNCTION IF EXISTS pgq._dispatch_keyed(pgq.jobs, pgq.job_classes, jsonb[], jsonb[], boolean, text, interval, text, text, interval, interval, interval);
