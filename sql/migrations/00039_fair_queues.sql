-- Fair queues (S114-S120): a queue defined with fair_by takes its jobs round-robin
-- across the values of one payload field, the key. Each job of such a queue carries its
-- key in pgq.jobs.fair_key, and the queue's keys with waiting or running jobs have a
-- turn in pgq.fair_turns: the reserve serves them in the order of their pass, which a
-- job taken advances by 1/weight. pgq.define_queue gains fair_by, so its old signature
-- goes; the new one is made by sql/functions on the same migrate.

-- +goose Up
ALTER TABLE pgq.queues ADD COLUMN fair_by text;
COMMENT ON COLUMN pgq.queues.fair_by IS
    'The payload field whose value is a job''s key in a fair queue (S114): the reserve takes jobs round-robin across keys. NULL: a plain FIFO queue.';

ALTER TABLE pgq.jobs ADD COLUMN fair_key text;
COMMENT ON COLUMN pgq.jobs.fair_key IS
    'The job''s key in a fair queue (S114): its payload''s fair_by field as text, '''' when it has none; NULL in other queues.';

-- A key's jobs in its queue's order, waiting or reserved: the reserve reads a key's
-- next ready jobs, and whether it has any live job left, from here.
CREATE INDEX jobs_fair_idx ON pgq.jobs (queue, fair_key, priority DESC, available_at, id) WHERE fair_key IS NOT NULL;

CREATE TABLE pgq.fair_turns (
    queue text NOT NULL,
    key   text NOT NULL,
    pass  float8 NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, key)
);
CREATE INDEX fair_turns_pass_idx ON pgq.fair_turns (queue, pass, key);
COMMENT ON TABLE pgq.fair_turns IS
    'The turns of a fair queue''s keys that have live jobs (S115): the reserve serves keys by ascending pass; each job it takes adds 1/weight to its key''s pass.';

CREATE TABLE pgq.fair_weights (
    queue  text NOT NULL,
    key    text NOT NULL,
    weight int NOT NULL CHECK (weight BETWEEN 1 AND 1000),
    PRIMARY KEY (queue, key)
);
COMMENT ON TABLE pgq.fair_weights IS
    'Weights of keys of fair queues (S117, pgq.set_fair_weight): a key of weight w gets w jobs a round; a key with no row weighs 1.';

DROP FUNCTION IF EXISTS pgq.define_queue(text, int, boolean);

-- +goose Down
DROP FUNCTION IF EXISTS pgq.define_queue(text, int, boolean, text);
DROP FUNCTION IF EXISTS pgq.set_fair_weight(text, text, int);
DROP TABLE pgq.fair_weights;
DROP TABLE pgq.fair_turns;
DROP INDEX pgq.jobs_fair_idx;
ALTER TABLE pgq.jobs DROP COLUMN fair_key;
ALTER TABLE pgq.queues DROP COLUMN fair_by;
