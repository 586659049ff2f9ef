-- The definition functions return one line of text that says what was defined, so that
-- SELECT pgq.define_job(…) in psql prints a sentence rather than an unlabelled row.
-- Their return type changes, so the old ones go before sql/functions/ defines the new.

-- +goose Up
DROP FUNCTION IF EXISTS pgq.define_queue(text, int, boolean);
DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb);
DROP FUNCTION IF EXISTS pgq.define_limit(text, int, interval);
DROP FUNCTION IF EXISTS pgq.schedule(text, text, text, jsonb, text, text, text, boolean, int, int, int[], int, int, boolean, interval, jsonb);

-- +goose Down
-- The functions of the previous release are re-created by its migrate.
DROP FUNCTION IF EXISTS pgq.define_queue(text, int, boolean);
DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb);
DROP FUNCTION IF EXISTS pgq.define_limit(text, int, interval);
DROP FUNCTION IF EXISTS pgq.schedule(text, text, text, jsonb, text, text, text, boolean, int, int, int[], int, int, boolean, interval, jsonb);
