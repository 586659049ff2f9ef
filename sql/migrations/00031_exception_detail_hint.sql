-- An exception's DETAIL and HINT are kept with the attempt that raised it and with the
-- failed job (S88), beside its message. The outcome functions take them as parameters at
-- the end of their lists, so a worker that passes none still calls them.

-- +goose Up
ALTER TABLE pgq.attempts ADD COLUMN exception_detail text, ADD COLUMN exception_hint text;
ALTER TABLE pgq.failed_jobs ADD COLUMN exception_detail text, ADD COLUMN exception_hint text;
COMMENT ON COLUMN pgq.attempts.exception_detail IS 'The DETAIL of the attempt''s exception, when it had one (S88).';
COMMENT ON COLUMN pgq.attempts.exception_hint IS 'The HINT of the attempt''s exception, when it had one (S88).';
COMMENT ON COLUMN pgq.failed_jobs.exception_detail IS 'The DETAIL of the final exception, when it had one (S88).';
COMMENT ON COLUMN pgq.failed_jobs.exception_hint IS 'The HINT of the final exception, when it had one (S88).';

DROP FUNCTION IF EXISTS pgq.fail(uuid, uuid, text, boolean, int, int[], timestamptz);
DROP FUNCTION IF EXISTS pgq.fail_many(uuid[], uuid[], text[], boolean[], int, int[]);
DROP FUNCTION IF EXISTS pgq._record(pgq.jobs, text, timestamptz, text, int, boolean, boolean);
DROP FUNCTION IF EXISTS pgq._bury(pgq.jobs, text, timestamptz);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.fail(uuid, uuid, text, boolean, int, int[], timestamptz, text, text);
DROP FUNCTION IF EXISTS pgq.fail_many(uuid[], uuid[], text[], boolean[], int, int[], text[], text[]);
DROP FUNCTION IF EXISTS pgq._record(pgq.jobs, text, timestamptz, text, int, boolean, boolean, text, text);
DROP FUNCTION IF EXISTS pgq._bury(pgq.jobs, text, timestamptz, text, text);
ALTER TABLE pgq.failed_jobs DROP COLUMN exception_detail, DROP COLUMN exception_hint;
ALTER TABLE pgq.attempts DROP COLUMN exception_detail, DROP COLUMN exception_hint;
