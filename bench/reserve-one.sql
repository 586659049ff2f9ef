-- pgbench script: one job dispatched, then reserved, each its own transaction, as an
-- idle worker meets it. In a migrated database with the class defined:
--   psql -c "SELECT pgq.define_job('noop')"
--   pgbench -n -r -f bench/reserve-one.sql -T 10
SELECT pgq.dispatch('noop', '{}');
SELECT count(*) FROM pgq.reserve('w1', '{default}', 100, 1, NULL, gen_random_uuid());
