-- Fair queues make a key's turn when the storing transaction commits (S121): a store
-- notes the keys that have no turn in the transaction's setting pgq.fair_entering and
-- adds one row here, whose deferred trigger (pgq._fair_entered, made by sql/functions)
-- makes their turns at commit, all in one statement in (queue, key) order. So a
-- transaction holds no new turn while it waits for anything else, and two that make the
-- same new turns wait for each other in one order only. The rows live from a store to
-- its commit: unlogged, since none outlives its transaction.

-- +goose Up
CREATE UNLOGGED TABLE pgq.fair_entries (
    txid xid8 PRIMARY KEY DEFAULT pg_current_xact_id()
);
COMMENT ON TABLE pgq.fair_entries IS
    'A row per open transaction that stored jobs of keys of fair queues with no turn: its deferred trigger makes their turns at commit (S121).';

-- +goose Down
DROP TABLE pgq.fair_entries;
