-- * pgq._check_dispatch_limits checks every option a dispatch may not choose, the delay,
--   retry_for and the payloads' presence included.
-- * pgq._pick_end returns the marks it keeps, so that the reserve calls it in an
--   expression; pgq._pick_rows reads the slots it is given and tells which rows are
--   plain, as pgq.picked does (its new attribute plain).
-- The old definitions are dropped here and made again by sql/functions on the same
-- migrate. The marks sessions keep (the setting pgq.reserve_marks) change layout: the
-- new functions drop marks of the old one, so a session that reserved before the
-- upgrade walks its queues from their fronts once, as on its first reserve.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._check_dispatch_limits(int, int, jsonb[]);
DROP FUNCTION IF EXISTS pgq._pick_end(jsonb);
DROP FUNCTION IF EXISTS pgq._pick_rows(jsonb, text, int, timestamptz, bigint[], pgq.loads);
-- +goose StatementBegin
DO $$
BEGIN
    -- In a DO block: sqlc, which reads these files, takes ALTER TYPE for a table's.
    ALTER TYPE pgq.picked ADD ATTRIBUTE plain boolean[];
    COMMENT ON TYPE pgq.picked IS
        'What pgq._pick locked of a queue: rows of one slot (their ctids and ids, in queue order, and whether each is plain), or the chunk of a bulk dispatch whose jobs come next; last: no ready job beyond.';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TYPE pgq.picked DROP ATTRIBUTE plain;
END
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS pgq._check_dispatch_limits(int, int, jsonb[], interval, timestamptz, interval);
DROP FUNCTION IF EXISTS pgq._dispatch_keyed(pgq.jobs, pgq.job_classes, jsonb[], jsonb[], boolean, text, interval, text, text, interval, interval, interval);
