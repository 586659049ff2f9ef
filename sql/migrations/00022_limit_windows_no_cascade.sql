-- A limit can be dropped while reserves use it (S83).
--
-- pgq.rate_limit_windows referenced pgq.rate_limits ON DELETE CASCADE. A reserve writes
-- a window only under its advisory lock (S82), but the cascade of a DELETE on a limit
-- locked the limit's window rows without those locks, in no order, and a reserve that
-- had created a window held a key share on the limit's row: a DELETE and two reserves
-- could deadlock, and a reserve creating a window as the limit went failed its foreign
-- key. The windows now hold no reference. pgq._admit reads only the windows of limits
-- that exist; pgq.drop_limit deletes the windows whose lock it can take at once, and
-- retention (pgq.prune_all) the others, under the same rule.

-- +goose Up
ALTER TABLE pgq.rate_limit_windows DROP CONSTRAINT IF EXISTS rate_limit_windows_limit_name_fkey;
COMMENT ON TABLE pgq.rate_limit_windows IS 'The current fixed window of each rate limit key: hits counted under the window''s advisory lock, so the budget is exact under concurrency (S28, S82). A window of a dropped limit is read by no reserve and deleted by pgq.drop_limit or retention (S83).';

-- +goose Down
DELETE FROM pgq.rate_limit_windows w WHERE NOT EXISTS (SELECT FROM pgq.rate_limits l WHERE l.name = w.limit_name);
ALTER TABLE pgq.rate_limit_windows ADD CONSTRAINT rate_limit_windows_limit_name_fkey
    FOREIGN KEY (limit_name) REFERENCES pgq.rate_limits (name) ON DELETE CASCADE;
COMMENT ON TABLE pgq.rate_limit_windows IS 'The current fixed window of each rate limit key: hits counted under the row lock, so the budget is exact under concurrency.';
