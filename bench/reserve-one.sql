-- pgbench script: one job dispatched, reserved and completed, each its own transaction,
-- as an idle worker meets it. In a migrated database with the class defined:
--   psql -c "SELECT pgq.define_job('noop')"
--   pgbench -n -r -D IDLE_MS=0 -f bench/reserve-one.sql -T 10
-- (with PGOPTIONS='-c track_functions=all', pg_stat_user_functions times each stage).
-- IDLE_MS=140 sleeps that long before each cycle, as an idle worker's machine does
-- between jobs; bench/reserve-floor.sql is the same cycle with a reserve of one statement.
\sleep :IDLE_MS ms
SELECT pgq.dispatch('noop', '{}');
SELECT r.uuid AS ru, r.lease_token AS tok FROM pgq.reserve('w1', '{default}', 100, 1, NULL, gen_random_uuid()) r \gset
SELECT count(*) FROM pgq.complete(ARRAY[':ru']::uuid[], ARRAY[':tok']::uuid[]);
