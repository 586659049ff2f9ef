-- pgbench script: bench/reserve-one.sql's cycle with a reserve of one prepared statement,
-- no lease token, sweep, marks or pickup checks: the floor a reserve of one job could
-- reach. It deletes the job instead of completing it. Only in a scratch database:
--   pgbench -M prepared -n -r -D IDLE_MS=140 -f bench/reserve-floor.sql -T 10
\sleep :IDLE_MS ms
SELECT pgq.dispatch('noop', '{}');
UPDATE pgq.jobs j SET reserved_at = now(), reserved_until = now() + interval '90 s', reserved_by = 'w1',
                      attempts = j.attempts + 1
WHERE j.uuid = (SELECT uuid FROM pgq.jobs WHERE queue = 'default' AND reserved_at IS NULL
                ORDER BY priority DESC, available_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING j.uuid AS ru \gset
DELETE FROM pgq.jobs WHERE uuid = :ru::uuid;
