-- The queue index of pgq.loads sorts a chunk where its first waiting job sorts (S85).
--
-- A chunk's jobs first_id + next .. first_id + n - 1 are still in it; those before have
-- become rows. Among chunks, first_id and first_id + next sort alike (their id ranges
-- never overlap), so the reserve's pickup order does not change. What changes is that
-- the key is now the id of the chunk's first waiting job: no row waits between it and
-- the chunk's other jobs (a job taken out of the middle splits its chunk), so a list of
-- waiting jobs in the queue's order (pgq.ready, ORDER BY … sort_id, id) can merge the
-- chunks, in this index's order, with the rows of jobs_reserve_idx, and expand only the
-- chunks it shows, rather than sorting every chunk job.
-- The price: a take that moves next is no longer a HOT update, once per chunk taken.

-- +goose Up
DROP INDEX pgq.loads_queue_idx;
CREATE INDEX loads_queue_idx ON pgq.loads (queue, priority DESC, available_at, (first_id + next));

-- +goose Down
DROP INDEX pgq.loads_queue_idx;
CREATE INDEX loads_queue_idx ON pgq.loads (queue, priority DESC, available_at, first_id);
