-- A fair queue's key with nothing ready (its jobs wait for later, or all run) is parked
-- (S125): its turn keeps its pass, and reserves do not walk it until
-- pgq.fair_turns.parked_until, or until a job of the key is written waiting
-- (pgq._pick_begin). The turns in play and the parked ones each have an index, so that
-- a reserve reads neither the other's rows. pgq._fair_turns_now gains the reserve's
-- clock, so its old signature goes; the new one is made by sql/functions on the same
-- migrate.

-- A fair queue's front, the lowest pass its last reserves served (only ever raised), is
-- where a new key's turn starts and a parked one rejoins.

-- +goose Up
CREATE TABLE pgq.fair_fronts (
    queue text PRIMARY KEY,
    pass  float8 NOT NULL
);
COMMENT ON TABLE pgq.fair_fronts IS
    'Per fair queue, the lowest pass its reserves served, only ever raised: where a new key''s turn starts and a turn back from parking rejoins (S115, S125).';
INSERT INTO pgq.fair_fronts (queue, pass) SELECT t.queue, min(t.pass) FROM pgq.fair_turns t GROUP BY t.queue;
ALTER TABLE pgq.fair_turns ADD COLUMN parked_until timestamptz;
COMMENT ON COLUMN pgq.fair_turns.parked_until IS
    'NULL: the turn is in play. Else the key had nothing ready when a reserve last walked it, and reserves pass it over until then (S125).';
DROP INDEX pgq.fair_turns_pass_idx;
CREATE INDEX fair_turns_play_idx ON pgq.fair_turns (queue, pass, key) WHERE parked_until IS NULL;
CREATE INDEX fair_turns_parked_idx ON pgq.fair_turns (queue, parked_until) WHERE parked_until IS NOT NULL;
DROP FUNCTION IF EXISTS pgq._fair_turns_now(text);
DROP FUNCTION IF EXISTS pgq._fair_settle(jsonb);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._fair_turns_now(text, timestamptz);
DROP FUNCTION IF EXISTS pgq._fair_settle(jsonb, jsonb);
DROP FUNCTION IF EXISTS pgq._fair_next_ready(text, text);
DROP FUNCTION IF EXISTS pgq._fair_rejoin(text);
DROP FUNCTION IF EXISTS pgq._fair_back(jsonb, jsonb);
DROP FUNCTION IF EXISTS pgq._fair_prune();
DROP INDEX pgq.fair_turns_parked_idx;
DROP INDEX pgq.fair_turns_play_idx;
CREATE INDEX fair_turns_pass_idx ON pgq.fair_turns (queue, pass, key);
ALTER TABLE pgq.fair_turns DROP COLUMN parked_until;
DROP TABLE pgq.fair_fronts;
