-- A fair queue's reserve reads each key's next jobs by jobs_fair_idx (S123). Its plans
-- are generic, and the planner estimates "fair_key = <some key>" from ANALYZE's
-- sample: in a queue where one key holds almost every job, the sample holds that key
-- alone, every key then seems to match every row, and a walk of jobs_reserve_idx that
-- filters by key looks as cheap, though it reads the big key's whole backlog for each
-- other key. A fixed estimate of distinct keys (1% of the rows) keeps a key's rows few
-- in the planner's eyes, whatever the sample. Each partition holds its own statistics.

-- +goose Up
ALTER TABLE pgq.jobs ALTER COLUMN fair_key SET (n_distinct = -0.01);
ALTER TABLE pgq.jobs_0 ALTER COLUMN fair_key SET (n_distinct = -0.01);
ALTER TABLE pgq.jobs_1 ALTER COLUMN fair_key SET (n_distinct = -0.01);
ALTER TABLE pgq.jobs_2 ALTER COLUMN fair_key SET (n_distinct = -0.01);
ALTER TABLE pgq.jobs_3 ALTER COLUMN fair_key SET (n_distinct = -0.01);
ANALYZE pgq.jobs;

-- +goose Down
ALTER TABLE pgq.jobs ALTER COLUMN fair_key RESET (n_distinct);
ALTER TABLE pgq.jobs_0 ALTER COLUMN fair_key RESET (n_distinct);
ALTER TABLE pgq.jobs_1 ALTER COLUMN fair_key RESET (n_distinct);
ALTER TABLE pgq.jobs_2 ALTER COLUMN fair_key RESET (n_distinct);
ALTER TABLE pgq.jobs_3 ALTER COLUMN fair_key RESET (n_distinct);
