-- name: MigrateLock :exec
-- One migrator at a time, for the migrations and the functions together. Waits.
SELECT pg_advisory_lock(hashtextextended('pgq.migrate', 0));

-- name: MigrateUnlock :exec
SELECT pg_advisory_unlock(hashtextextended('pgq.migrate', 0));

-- name: MigrateSetRole :exec
-- For the rest of the migrate's transaction, create and grant as pgq's owner.
SELECT set_config('role', @role::text, true);

-- name: MigrateResetRole :exec
SELECT set_config('role', 'none', true);
