-- A job carries the W3C trace context of its dispatch (S105-S107).
--
-- * pgq.jobs and pgq.loads: traceparent and tracestate, as dispatch stored them (the
--   option, or the settings pgq.traceparent and pgq.tracestate of the dispatching
--   transaction); NULL when the dispatch had none. A chunk of a bulk dispatch holds it
--   once for all its jobs, which share it.
-- * pgq.job_chains: the same, for the later steps of a chain, which are queued in a
--   worker's transaction and carry the context of the chain's dispatch.
-- * pgq.reservation: traceparent and tracestate, so that the worker's span of an
--   attempt can link to the dispatch.
-- * pgq.dispatch, pgq.dispatch_many, pgq.dispatch_staged and the functions behind them
--   (pgq._dispatch_entries too), and pgq.dispatch_chain and pgq.dispatch_batch (with
--   pgq._chain_start and pgq._batch_add), take the options traceparent and tracestate: the old signatures are dropped here
--   and the new ones made by sql/functions on the same migrate.

-- +goose Up
ALTER TABLE pgq.jobs ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE pgq.loads ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE pgq.job_chains ADD COLUMN traceparent text, ADD COLUMN tracestate text;
COMMENT ON COLUMN pgq.jobs.traceparent IS 'The W3C traceparent of the dispatch (S105), NULL when it had none.';
COMMENT ON COLUMN pgq.jobs.tracestate IS 'The W3C tracestate of the dispatch (S105), NULL when it had none.';
COMMENT ON COLUMN pgq.loads.traceparent IS 'The W3C traceparent of the dispatch, shared by every job of the chunk (S105).';
COMMENT ON COLUMN pgq.loads.tracestate IS 'The W3C tracestate of the dispatch, shared by every job of the chunk (S105).';
COMMENT ON COLUMN pgq.job_chains.traceparent IS 'The W3C traceparent of the chain''s dispatch, which each step carries (S107).';
COMMENT ON COLUMN pgq.job_chains.tracestate IS 'The W3C tracestate of the chain''s dispatch, which each step carries (S107).';
-- +goose StatementBegin
DO $$
BEGIN
    -- In a DO block: sqlc, which reads these files, takes ALTER TYPE for a table's.
    ALTER TYPE pgq.reservation ADD ATTRIBUTE traceparent text, ADD ATTRIBUTE tracestate text;
END
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS pgq.dispatch(text, jsonb, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval);
DROP FUNCTION IF EXISTS pgq.dispatch_many(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval);
DROP FUNCTION IF EXISTS pgq.dispatch_staged(text, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval);
DROP FUNCTION IF EXISTS pgq._dispatch_staged_batch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval);
DROP FUNCTION IF EXISTS pgq._dispatch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, int, boolean);
DROP FUNCTION IF EXISTS pgq._dispatch_entries(jsonb, text, uuid, uuid, int, boolean);
DROP FUNCTION IF EXISTS pgq.dispatch_chain(jsonb, text, text);
DROP FUNCTION IF EXISTS pgq.dispatch_batch(jsonb, text, text, text, text, boolean, text);
DROP FUNCTION IF EXISTS pgq._chain_start(uuid, jsonb, text, text, uuid);
DROP FUNCTION IF EXISTS pgq._batch_add(pgq.job_batches, jsonb);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.dispatch(text, jsonb, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text);
DROP FUNCTION IF EXISTS pgq.dispatch_many(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text);
DROP FUNCTION IF EXISTS pgq.dispatch_staged(text, text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text);
DROP FUNCTION IF EXISTS pgq._dispatch_staged_batch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, text, text);
DROP FUNCTION IF EXISTS pgq._dispatch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, int, boolean, text, text);
DROP FUNCTION IF EXISTS pgq._dispatch_entries(jsonb, text, uuid, uuid, int, boolean, text, text);
DROP FUNCTION IF EXISTS pgq.dispatch_chain(jsonb, text, text, text, text);
DROP FUNCTION IF EXISTS pgq.dispatch_batch(jsonb, text, text, text, text, boolean, text, text, text);
DROP FUNCTION IF EXISTS pgq._chain_start(uuid, jsonb, text, text, uuid, text, text);
DROP FUNCTION IF EXISTS pgq._batch_add(pgq.job_batches, jsonb, text, text);
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TYPE pgq.reservation DROP ATTRIBUTE traceparent, DROP ATTRIBUTE tracestate;
END
$$;
-- +goose StatementEnd
ALTER TABLE pgq.job_chains DROP COLUMN traceparent, DROP COLUMN tracestate;
ALTER TABLE pgq.loads DROP COLUMN traceparent, DROP COLUMN tracestate;
ALTER TABLE pgq.jobs DROP COLUMN traceparent, DROP COLUMN tracestate;
