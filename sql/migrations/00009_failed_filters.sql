-- pgq.flush_failed and pgq.retry_failed filter by queue, job and age, so `pgq-worker
-- failed flush --queue Q` and `failed retry all --job J` delete or requeue exactly the
-- jobs they name in one statement. New parameters make new signatures: the old ones go.

-- +goose Up
DROP FUNCTION IF EXISTS pgq.flush_failed(interval);
DROP FUNCTION IF EXISTS pgq.retry_failed(uuid, text);

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 9 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
