#!/usr/bin/env bash
# What one job row costs to insert, piece by piece: the floor under bulk dispatch
# (issue 19). In a migrated scratch pgq database (the URL, $1), five scratch tables
# shaped like a slot of pgq.jobs (LIKE pgq.jobs_0: its columns and defaults) take
# 100,000 rows each in one INSERT, after a TRUNCATE and a CHECKPOINT:
#   narrow      uuid, job, queue, payload and slot only, no index
#   row         every column of pgq.jobs, no index
#   +key        and the uuid key (fillfactor 50, as each slot's)
#   +reserve    and jobs_reserve_idx (queue, priority DESC, available_at, id)
#   +txid       and jobs_txid_idx: the three entries every job has at dispatch
# and then pgq itself, after a TRUNCATE of pgq.jobs (so the database must be a scratch
# one: the script stops if pgq.jobs holds a row):
#   jobs        the same INSERT into pgq.jobs, routed to the current slot (all its
#               indexes, the partial ones empty for these rows)
#   dispatch    pgq.dispatch_many of 100,000 payloads in one call (its checks, uuids)
# Rounds alternate; the script prints each one's median in µs per row. The scratch
# tables are dropped at the end. Usage: bench/bulk-floor.sh URL [rounds, default 5]
set -euo pipefail
url=${1:?usage: bench/bulk-floor.sh URL-of-a-scratch-pgq-database [rounds]}
rounds=${2:-5}
tables=(floor_narrow floor_row floor_key floor_reserve floor_txid)
steps=("${tables[@]}" jobs dispatch)
times=$(mktemp)
trap 'rm -f "$times"' EXIT

if [ "$(psql "$url" -X -qAtc 'SELECT EXISTS (SELECT FROM pgq.jobs)')" != f ]; then
    echo "bulk-floor: pgq.jobs in $url is not empty; run this in a scratch database" >&2
    exit 1
fi

{
    echo '\set ON_ERROR_STOP on'
    echo '\set QUIET on'
    echo 'SET client_min_messages = warning;'
    echo "DROP TABLE IF EXISTS $(IFS=,; echo "${tables[*]}");" # left by a run that failed
    cat <<'SQL'
CREATE TABLE floor_narrow (uuid uuid, job text, queue text, payload jsonb, slot smallint);
CREATE TABLE floor_row (LIKE pgq.jobs_0 INCLUDING DEFAULTS);
CREATE TABLE floor_key (LIKE floor_row INCLUDING DEFAULTS);
ALTER TABLE floor_key ADD PRIMARY KEY (uuid) WITH (fillfactor = 50);
CREATE TABLE floor_reserve (LIKE floor_key INCLUDING DEFAULTS INCLUDING INDEXES);
CREATE INDEX ON floor_reserve (queue, priority DESC, available_at, id) WHERE reserved_at IS NULL;
CREATE TABLE floor_txid (LIKE floor_reserve INCLUDING DEFAULTS INCLUDING INDEXES);
CREATE INDEX ON floor_txid (txid);
\timing on
SQL
    for ((r = 1; r <= rounds; r++)); do
        for t in "${tables[@]}"; do
            echo "TRUNCATE $t; CHECKPOINT;"
            echo "\\echo $t" # the next Time: line is the INSERT's
            # uuids in ascending order, as pgq's version 7 uuids of one call are.
            echo "INSERT INTO $t (uuid, job, queue, payload, slot) SELECT lpad(to_hex(i), 32, '0')::uuid, 'noop', 'default', '{}', 0 FROM generate_series(1, 100000) i;"
        done
        echo "TRUNCATE pgq.jobs; CHECKPOINT;"
        echo "\\echo jobs"
        echo "INSERT INTO pgq.jobs (uuid, job, queue, payload, slot) SELECT lpad(to_hex(i), 32, '0')::uuid, 'noop', 'default', '{}', (SELECT pgq._slot()) FROM generate_series(1, 100000) i;"
        echo "TRUNCATE pgq.jobs; CHECKPOINT;"
        echo "\\echo dispatch"
        echo "SELECT count(*) FROM pgq.dispatch_many('noop', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 100000))) \\g /dev/null"
    done
    echo "TRUNCATE pgq.jobs;"
    echo "DROP TABLE $(IFS=,; echo "${tables[*]}");"
} | psql "$url" -X -q -f - |
    awk '/^(floor_|jobs$|dispatch$)/ { t = $1; next } /^Time:/ && t != "" { print t, $2; t = "" }' >"$times"

for t in "${steps[@]}"; do
    ms=$(awk -v t="$t" '$1 == t { print $2 }' "$times" | sort -n)
    us=$(echo "$ms" | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] / 100 }')
    printf '%-14s median %s µs per row  (ms per 100,000 rows: %s)\n' "$t" "$us" "$(echo $ms)"
done
