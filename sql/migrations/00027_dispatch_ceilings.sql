-- What a producer may choose (S90, S91) and what the server can run (S92).
--
-- * pgq.job_classes gains the ceilings that a dispatch's own options must keep within
--   when they are looser than the class's: max_tries (0: unlimited), max_retry_for,
--   min_backoff (seconds) and max_timeout (seconds). NULL, as every class defined
--   before has, takes the database's ceiling (the settings pgq.max_tries and so on).
-- * pgq.define_job and pgq._define_job take the ceilings as their last parameters,
--   pgq._dispatch and pgq._dispatch_entries whether the ceilings apply: the old
--   signatures are dropped here, made again by sql/functions on the same migrate, and
--   granted again by privileges.sql.

-- +goose Up
ALTER TABLE pgq.job_classes
    ADD COLUMN max_tries int CHECK (max_tries >= 0),
    ADD COLUMN max_retry_for interval CHECK (max_retry_for > interval '0'),
    ADD COLUMN min_backoff int CHECK (min_backoff >= 0),
    ADD COLUMN max_timeout int CHECK (max_timeout BETWEEN 1 AND 2147483);
COMMENT ON COLUMN pgq.job_classes.max_tries IS 'The most tries a dispatch may set beyond the class''s own (0: unlimited allowed); NULL: the database''s pgq.max_tries (S90, S91).';
COMMENT ON COLUMN pgq.job_classes.max_retry_for IS 'The latest deadline a dispatch may set beyond the class''s own, from the dispatch; NULL: the database''s pgq.max_retry_for (S90, S91).';
COMMENT ON COLUMN pgq.job_classes.min_backoff IS 'The shortest backoff entry, in seconds, a dispatch may set; NULL: the database''s pgq.min_backoff (S90, S91).';
COMMENT ON COLUMN pgq.job_classes.max_timeout IS 'The longest timeout, in seconds, a dispatch may set beyond the class''s own; NULL: the database''s pgq.max_timeout (S90, S91).';

DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb);
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb);
DROP FUNCTION IF EXISTS pgq._dispatch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, int);
DROP FUNCTION IF EXISTS pgq._dispatch_entries(jsonb, text, uuid, uuid, int);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.define_job(text, text, text, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int);
DROP FUNCTION IF EXISTS pgq._define_job(text, text, regprocedure, int, int[], int, int, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, int, interval, int, int);
DROP FUNCTION IF EXISTS pgq._dispatch(text, jsonb[], text, interval, int, int[], timestamptz, int, int, boolean, int, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, int, boolean);
DROP FUNCTION IF EXISTS pgq._dispatch_entries(jsonb, text, uuid, uuid, int, boolean);
DROP FUNCTION IF EXISTS pgq._dispatch_ceilings(text, pgq.job_classes, int, int[], timestamptz, int, int);
DROP FUNCTION IF EXISTS pgq.fail_setup(uuid, uuid, text, timestamptz);
ALTER TABLE pgq.job_classes DROP COLUMN max_tries, DROP COLUMN max_retry_for, DROP COLUMN min_backoff, DROP COLUMN max_timeout;
