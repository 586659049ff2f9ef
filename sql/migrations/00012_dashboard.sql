-- The dashboard (dashboard/, `pgq-worker dashboard`): what its pages need from the schema.
--
-- * attempts_finished_at_brin: the overview charts the last hour of attempts by outcome,
--   and the workers page lists the workers that finished an attempt lately. Both read
--   only the recent end of the history, found through a BRIN index on finished_at. A
--   BRIN index costs the worker's hot path next to nothing: a row added to a block range
--   not yet summarized (the table's end, where completions land) writes nothing to the
--   index, where a B-tree would take one more index insert per attempt. autosummarize
--   has autovacuum summarize each range once it fills, so a query reads the ranges that
--   hold the recent rows (and the one still filling), not the whole history.
-- * pgq.actions.on_behalf_of: an operator tool that connects as one role for many people
--   (the dashboard) names the person it acts for in the setting pgq.on_behalf_of, in the
--   action's transaction; every row that transaction adds to pgq.actions records it.
--   A column default, so every function that records an action records it too.

-- +goose Up
CREATE INDEX attempts_finished_at_brin ON pgq.attempts USING brin (finished_at) WITH (autosummarize = on);

ALTER TABLE pgq.actions ADD COLUMN on_behalf_of text DEFAULT nullif(current_setting('pgq.on_behalf_of', true), '');
COMMENT ON COLUMN pgq.actions.on_behalf_of IS
    'Who the login role (actor) acted for, as the tool that took the action named them in the setting pgq.on_behalf_of (the dashboard: dashboard:USER); NULL when none was set.';

-- +goose Down
ALTER TABLE pgq.actions DROP COLUMN on_behalf_of;
DROP INDEX pgq.attempts_finished_at_brin;
