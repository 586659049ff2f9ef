#!/usr/bin/env bash
# What a key costs at dispatch (issue 19). In a migrated pgq database (the URL, $1),
# each round times, in one transaction that is rolled back:
#   single   1,000 calls of pgq.dispatch, each a unique job (unique_for, unique_by k)
#   many     one pgq.dispatch_many of 1,000 such jobs
#   single-plain  1,000 calls of pgq.dispatch of a job without a key
#   plain    one pgq.dispatch_many of 1,000 jobs without a key
# and the script prints the median of each over the rounds, in ms. Nothing is left
# behind but the two job classes it defines (dispatch_keys_unique, dispatch_keys_plain).
# Usage: bench/dispatch-keys.sh URL [rounds, default 5]
set -euo pipefail
url=${1:?usage: bench/dispatch-keys.sh URL-of-a-pgq-database [rounds]}
rounds=${2:-5}

psql "$url" -X -q -o /dev/null -v ON_ERROR_STOP=1 <<'SQL'
SELECT pgq.define_job('dispatch_keys_unique', queue => 'dispatch_keys', unique_for => '1 hour', unique_by => ARRAY['k']);
SELECT pgq.define_job('dispatch_keys_plain', queue => 'dispatch_keys');
SQL

for _ in $(seq "$rounds"); do
    psql "$url" -X -q -v ON_ERROR_STOP=1 <<'SQL' | awk '/^Time:/ {print $2}' | paste -sd' '
BEGIN;
SELECT count(*) FROM pgq.dispatch_many('dispatch_keys_unique', ARRAY(SELECT jsonb_build_object('k', 'warm' || g) FROM generate_series(1, 10) g)) \g /dev/null
\timing on
SELECT count(pgq.dispatch('dispatch_keys_unique', jsonb_build_object('k', 'single' || g))) FROM generate_series(1, 1000) g \g /dev/null
SELECT count(*) FROM pgq.dispatch_many('dispatch_keys_unique', ARRAY(SELECT jsonb_build_object('k', 'many' || g) FROM generate_series(1, 1000) g)) \g /dev/null
SELECT count(pgq.dispatch('dispatch_keys_plain', jsonb_build_object('k', g))) FROM generate_series(1, 1000) g \g /dev/null
SELECT count(*) FROM pgq.dispatch_many('dispatch_keys_plain', ARRAY(SELECT jsonb_build_object('k', g) FROM generate_series(1, 1000) g)) \g /dev/null
\timing off
ROLLBACK;
SQL
done | python3 -c '
import statistics as st, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
for name, col in zip(("single", "many", "single-plain", "plain"), zip(*rows)):
    print(f"{name:<12} median {st.median(col):7.1f} ms over {len(col)} rounds: " + ", ".join(f"{v:.1f}" for v in col))
'
