-- concurrency_limited middleware (S99): named limits shared by job classes, and the key
-- a job over its limit waits for, so that the end of a running job wakes it.

-- +goose Up
CREATE TABLE pgq.concurrency_limits (
    name       text PRIMARY KEY,
    "limit"    int NOT NULL CHECK ("limit" BETWEEN 1 AND 1000),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE pgq.concurrency_limits IS 'Named concurrency limits (pgq.define_concurrency): at most "limit" handlers of a key run at once across every worker (S99).';

ALTER TABLE pgq.jobs ADD COLUMN waits_on text;

COMMENT ON COLUMN pgq.jobs.waits_on IS 'The concurrency_limited key this waiting job found full (S99): the end of a job holding that key makes it ready.';

CREATE INDEX jobs_waits_on_idx ON pgq.jobs (waits_on, id) WHERE waits_on IS NOT NULL;

-- +goose Down
DROP INDEX pgq.jobs_waits_on_idx;
ALTER TABLE pgq.jobs DROP COLUMN waits_on;
DROP TABLE pgq.concurrency_limits;
