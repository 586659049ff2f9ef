-- A fair queue's key with nothing ready (its jobs wait for later, or all run) is parked
-- (S125): its turn keeps its pass, and reserves do not walk it until
-- pgq.fair_turns.parked_until, or until a job of the key is written waiting
-- (pgq._pick_begin). The turns in play and the parked ones each have an index of their
-- own, so that a reserve reads neither the other's rows. pgq._fair_turns_now gains the
-- reserve's clock and pgq._fair_settle the turns that came back, so their old
-- signatures go; the new ones are made by sql/functions on the same migrate.

-- +goose Up
ALTER TABLE pgq.fair_turns ADD COLUMN parked_until timestamptz;
COMMENT ON COLUMN pgq.fair_turns.parked_until IS
    'NULL: the turn is in play. Else the key had nothing ready when a reserve last walked it, and reserves pass it over until then (S125).';
CREATE INDEX fair_turns_play_idx ON pgq.fair_turns (queue, pass, key) WHERE parked_until IS NULL;
CREATE INDEX fair_turns_parked_idx ON pgq.fair_turns (queue, parked_until) WHERE parked_until IS NOT NULL;
DROP FUNCTION IF EXISTS pgq._fair_turns_now(text);
DROP FUNCTION IF EXISTS pgq._fair_settle(jsonb);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._fair_turns_now(text, timestamptz);
DROP FUNCTION IF EXISTS pgq._fair_settle(jsonb, jsonb);
DROP FUNCTION IF EXISTS pgq._fair_next_ready(text, text);
DROP FUNCTION IF EXISTS pgq._fair_rejoin(text);
DROP FUNCTION IF EXISTS pgq._fair_floor(text);
DROP FUNCTION IF EXISTS pgq._fair_back(jsonb, jsonb);
DROP FUNCTION IF EXISTS pgq._fair_prune();
DROP INDEX pgq.fair_turns_parked_idx;
DROP INDEX pgq.fair_turns_play_idx;
DROP VIEW IF EXISTS pgq.fair_keys;  -- made again, without parked_until, by sql/functions
ALTER TABLE pgq.fair_turns DROP COLUMN parked_until;
