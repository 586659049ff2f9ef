-- The storage boundary (sql/functions/29_storage.sql) and the reserve as a pipeline of
-- stages (45_reserve.sql): the types its stages hand on, and the functions it replaced.
--
-- * pgq.picked: what pgq._pick locked of a queue: rows of one slot, or a chunk of a bulk
--   dispatch whose jobs come next.
-- * pgq.reserve_batch: the picked rows on their way through the pickup checks and the
--   admission to the take.

-- +goose Up
CREATE TYPE pgq.picked AS (
    slot  smallint,
    tids  tid[],
    ids   bigint[],
    chunk pgq.loads,
    last  boolean
);
COMMENT ON TYPE pgq.picked IS
    'What pgq._pick locked of a queue: rows of one slot (their ctids and ids, in queue order), or the chunk of a bulk dispatch whose jobs come next; last: no ready job beyond.';

CREATE TYPE pgq.reserve_batch AS (
    slot       smallint,
    tids       tid[],
    tokens     uuid[],
    held       text[],
    expire     int[],
    admit      pgq.jobs[],
    admit_ords int[],
    reports    pgq.reservation[],
    report_places int[],
    turned     bigint[],
    busy       boolean
);
COMMENT ON TYPE pgq.reserve_batch IS
    'Picked rows on their way through pgq.reserve''s stages: per row (in pick order) its ctid (NULL once it will not run), lease token, overlap keys and their expire_after; the jobs still to admit; the reports of jobs that will not run, with their places in the pick; the ids turned away; whether a rate-limit window was busy.';

COMMENT ON TABLE pgq.loads IS 'Jobs of bulk dispatches not yet reserved, a row per chunk of up to 1,024 (docs/design/storage.md): read pgq.live_jobs for the jobs.';

-- Views that no longer have a chunk column (they read pgq.live_jobs now): made again by
-- the functions that follow the migrations, as CREATE OR REPLACE cannot drop a column.
DROP VIEW IF EXISTS pgq.ready, pgq.scheduled, pgq.retrying, pgq.running, pgq.job_settings;

DROP FUNCTION IF EXISTS pgq._load_take(pgq.loads, int, timestamptz, int, text, text);
DROP FUNCTION IF EXISTS pgq._load_rows(pgq.loads, int, int, smallint, timestamptz, int, text, text);
DROP FUNCTION IF EXISTS pgq._load_job_to_row(uuid);
DROP FUNCTION IF EXISTS pgq._marks_lower(jsonb, text, int, timestamptz, bigint);
DROP FUNCTION IF EXISTS pgq._marks_since(text[]);
DROP FUNCTION IF EXISTS pgq._marks_keep(jsonb, pg_snapshot);

-- +goose Down
DROP TYPE pgq.reserve_batch;
DROP TYPE pgq.picked;
