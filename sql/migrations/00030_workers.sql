-- What each running worker serves (S87): its queues and the job names it has a Go
-- handler for. A worker writes its row when it starts and again every few seconds while
-- it runs, and deletes it when it stops; a row not written for a minute is a worker that
-- died, and no longer counts as live. pgq.check, pgq.dispatch_warnings, pgq-worker check,
-- the CLI's dispatch and the dashboard read it to tell a queue no worker serves, or a
-- job name nothing handles, before the jobs wait or fail for it.

-- +goose Up
CREATE TABLE pgq.workers (
    name       text PRIMARY KEY,
    queues     text[] NOT NULL,
    handlers   text[] NOT NULL DEFAULT '{}',
    version    text,
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgq.workers IS
    'Running workers: the queues each serves and its Go handlers'' job names, written at start and every few seconds; live while seen_at is recent (S87).';

-- pgq.check's findings say which queue they are about, and it can be asked about some
-- queues only (a worker checks its own). (In a DO block: sqlc, which reads these files,
-- does not know composite types; sql/sqlc/composite_types.sql tells it this one.)
-- +goose StatementBegin
DO $$ BEGIN ALTER TYPE pgq.check_finding ADD ATTRIBUTE queue text; END $$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS pgq.check(int, int);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.check(int, int, text[]);
-- +goose StatementBegin
DO $$ BEGIN ALTER TYPE pgq.check_finding DROP ATTRIBUTE queue; END $$;
-- +goose StatementEnd
DROP TABLE pgq.workers;
