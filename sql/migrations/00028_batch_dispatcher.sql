-- Who may add to a batch (S93).
--
-- * pgq.job_batches.dispatched_by: the login role that dispatched the batch, which may
--   add to it. NULL for a batch dispatched before: any role that may call
--   pgq.add_to_batch may add to such a batch.
-- * pgq.add_to_batch takes a running member's job and lease token as its last
--   parameters: the old signature is dropped here, made again by sql/functions on the
--   same migrate, and granted again by privileges.sql.

-- +goose Up
ALTER TABLE pgq.job_batches ADD COLUMN dispatched_by text;
COMMENT ON COLUMN pgq.job_batches.dispatched_by IS 'The login role that dispatched the batch: it, the roles that are members of it and the batch''s running jobs may add to it (S93). NULL for a batch dispatched before it was recorded.';

DROP FUNCTION IF EXISTS pgq.add_to_batch(uuid, jsonb);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.add_to_batch(uuid, jsonb, uuid, uuid);
DROP FUNCTION IF EXISTS pgq._may_add_to_batch(pgq.job_batches, uuid, uuid);
ALTER TABLE pgq.job_batches DROP COLUMN dispatched_by;
