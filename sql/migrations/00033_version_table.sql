-- goose's version table lives in schema pgq (pgq.Migrate creates it there, or moves an
-- earlier release's public.pgq_goose_version there first: sql/bootstrap.sql). (In a DO
-- block: sqlc, which reads these files, does not know the table goose creates.)

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    COMMENT ON TABLE pgq.goose_version IS 'The migrations applied (goose''s version table): pgq-worker status shows the last one.';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    COMMENT ON TABLE pgq.goose_version IS NULL;
END
$$;
-- +goose StatementEnd
