-- A fair queue's walk takes each round of keys in one statement (pgq._fair_round),
-- where it probed each key by a call of pgq._fair_probe, which goes; pgq._fair_round is
-- made by sql/functions on the same migrate.

-- +goose Up
DROP FUNCTION IF EXISTS pgq._fair_probe(smallint[], text, text, int, int, timestamptz, bigint[]);

-- +goose Down
DROP FUNCTION IF EXISTS pgq._fair_round(smallint[], text, int, text[], int[], int, timestamptz, bigint[]);
