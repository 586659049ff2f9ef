-- Overlap leases in generations (S81), as pgq.jobs is in slots (S80).
--
-- A without_overlapping lease is a row of pgq.overlap_locks, inserted by the reserve
-- that takes it and deleted by the attempt's outcome. While a transaction, snapshot or
-- replication slot holds the xmin horizon back, no vacuum removes the deleted versions,
-- and every later lease of a key steps over all of that key's earlier ones, slower with
-- every lease for as long as the hold lasts. So the leases live in three generations,
-- partitions of pgq.overlap_locks: new leases go to the current one; once it holds
-- pgq.rotate's slot size / 64 (1 MiB at the worker's default), an older generation in
-- which no lease is live any more is truncated (which a held horizon cannot prevent)
-- and becomes current. A lease keeps
-- its generation until it ends.
--
-- * pgq.overlap_locks: the same columns and a generation (gen); the primary key is
--   (key, gen), so a key is unique within a generation, and pgq._admit keeps it unique
--   across them (see there). Existing leases go to generation 0, the current one.
-- * pgq.overlap_gens: the three generations and which one is current.
-- * pgq.locks, which reads pgq.overlap_locks, is dropped here and made again by
--   sql/functions on the same migrate.

-- +goose Up
DROP VIEW IF EXISTS pgq.locks;
ALTER TABLE pgq.overlap_locks RENAME TO overlap_locks_before_generations;
ALTER TABLE pgq.overlap_locks_before_generations RENAME CONSTRAINT overlap_locks_pkey TO overlap_locks_before_generations_pkey;

CREATE TABLE pgq.overlap_locks (
    key          text NOT NULL,
    job_uuid     uuid NOT NULL,
    worker       text,
    since        timestamptz NOT NULL,
    expire_after int,
    lease_token  uuid NOT NULL,
    expires_at   timestamptz NOT NULL,
    gen          smallint NOT NULL,
    CONSTRAINT overlap_locks_pkey PRIMARY KEY (key, gen)
) PARTITION BY LIST (gen);
CREATE TABLE pgq.overlap_locks_0 PARTITION OF pgq.overlap_locks FOR VALUES IN (0);
CREATE TABLE pgq.overlap_locks_1 PARTITION OF pgq.overlap_locks FOR VALUES IN (1);
CREATE TABLE pgq.overlap_locks_2 PARTITION OF pgq.overlap_locks FOR VALUES IN (2);
INSERT INTO pgq.overlap_locks (key, job_uuid, worker, since, expire_after, lease_token, expires_at, gen)
SELECT key, job_uuid, worker, since, expire_after, lease_token, expires_at, 0 FROM pgq.overlap_locks_before_generations;
DROP TABLE pgq.overlap_locks_before_generations;

COMMENT ON TABLE pgq.overlap_locks IS 'without_overlapping leases (S26, S34): the job holding each key, until expires_at unless its worker''s heartbeat renews it. Released with the attempt''s outcome. Partitioned by generation (pgq.overlap_gens, S81).';
COMMENT ON COLUMN pgq.overlap_locks.expires_at IS 'When the lease ends unless renewed: 10 s after the last heartbeat, never past since + expire_after.';
COMMENT ON COLUMN pgq.overlap_locks.gen IS 'The generation the lease was taken in (pgq.overlap_gens): the current one then. A key has at most one live lease, in any generation.';
COMMENT ON TABLE pgq.overlap_locks_0 IS 'Generation 0 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';
COMMENT ON TABLE pgq.overlap_locks_1 IS 'Generation 1 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';
COMMENT ON TABLE pgq.overlap_locks_2 IS 'Generation 2 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';

CREATE TABLE pgq.overlap_gens (
    gen       smallint PRIMARY KEY,
    partition regclass NOT NULL UNIQUE,
    state     text NOT NULL CHECK (state IN ('current', 'old')),
    since     timestamptz NOT NULL DEFAULT now(),
    tries     int NOT NULL DEFAULT 0,
    next_try  timestamptz
);
CREATE UNIQUE INDEX overlap_gens_current_idx ON pgq.overlap_gens (state) WHERE state = 'current';
COMMENT ON TABLE pgq.overlap_gens IS 'The generations of pgq.overlap_locks (S81): current (new leases go there) or old (its leases end where they are; truncated and made current again once none is live). pgq.rotate moves them on.';
COMMENT ON COLUMN pgq.overlap_gens.since IS 'When the generation entered its state.';
COMMENT ON COLUMN pgq.overlap_gens.tries IS 'Old: how many times in a row pgq.rotate could not take its lock in time to truncate it.';
COMMENT ON COLUMN pgq.overlap_gens.next_try IS 'Old: pgq.rotate asks for its lock again from then on (1, 2, 4, 8, then every 10 seconds).';
INSERT INTO pgq.overlap_gens (gen, partition, state) VALUES
    (0, 'pgq.overlap_locks_0', 'current'), (1, 'pgq.overlap_locks_1', 'old'), (2, 'pgq.overlap_locks_2', 'old');

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    RAISE EXCEPTION 'pgq: migration 20 cannot be undone: restore a backup instead' USING ERRCODE = '55000';
END
$$;
-- +goose StatementEnd
