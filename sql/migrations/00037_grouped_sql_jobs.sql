-- Grouped SQL jobs (S109-S113): the worker runs several short SQL jobs in one
-- transaction, each in its own savepoint.
--
-- * pgq.job_classes.isolated: a class whose jobs always run alone, one transaction per
--   job (handlers that must commit alone: session locks, COMMIT-sensitive extensions).
-- * pgq.sql_alone: jobs whose last attempt was lost with its group (the transaction
--   ended without a commit: its backend was killed, the commit failed, the connection
--   dropped). Their next attempt runs alone, so the job that takes a group down is
--   found and charged; the mark goes when an attempt of the job runs alone.
-- * pgq.run_sql_job and pgq._sql_job take grouped: in a group, a job of an isolated
--   class or a marked job is refused (PQ003) before its handler runs, and the worker
--   runs it alone.

-- +goose Up
ALTER TABLE pgq.job_classes ADD COLUMN isolated boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN pgq.job_classes.isolated IS
    'The worker runs each job of this class in a transaction of its own, never grouped with other SQL jobs (S112).';

CREATE TABLE pgq.sql_alone (
    job_uuid  uuid PRIMARY KEY,
    marked_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgq.sql_alone IS
    'SQL jobs whose last attempt was lost with its group: their next attempt runs alone (S111).';

DROP FUNCTION IF EXISTS pgq.run_sql_job(uuid, uuid);
DROP FUNCTION IF EXISTS pgq._sql_job(uuid, uuid);
DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text[]);
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.run_sql_job(uuid, uuid, boolean);
DROP FUNCTION IF EXISTS pgq._sql_job(uuid, uuid, boolean);
DROP FUNCTION IF EXISTS pgq.give_back_group(uuid[], uuid[], text, timestamptz);
DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text[], boolean);
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int, text, boolean);
DROP TABLE pgq.sql_alone;
ALTER TABLE pgq.job_classes DROP COLUMN isolated;
