#!/usr/bin/env bash
# What a held xmin horizon does to reused without_overlapping keys (issue 19). In a
# migrated scratch pgq database (the URL, $1), rounds of 1,000 jobs are dispatched,
# reserved in one pgq.reserve call and completed in one pgq.complete call, each in its
# own transaction, timed on the server. Every round uses the same 1,000 overlap keys
# (each reused, never contended). Three runs, each printing the median reserve and
# complete time of rounds 2-6, of the five rounds in the middle and of the last five:
#   overlap          without_overlapping jobs, no other session
#   overlap, held    the same while another session holds a transaction id
#   plain, held      jobs without middleware while the id is held (the reference)
# and, for the held runs, how many pages a lookup of one reused key reads at the end
# (EXPLAIN BUFFERS: one per version of the key's row it steps over) and the size of
# pgq.overlap_locks.
# A lease is a pgq.overlap_locks row inserted by reserve and deleted by the outcome, so
# under the hold each round leaves one more version of every key's row, which the next
# round steps over, until pgq.rotate truncates the generation it is in (S81): each
# round ends with a call of pgq.rotate(slot_bytes), as a worker makes every second
# (default 64 MiB, the worker's --slot-mb; the leases' generations turn at a
# sixty-fourth of it). The script stops if pgq.jobs holds a row (it must be a scratch
# database), and empties pgq's tables between the runs.
# Usage: bench/lease-hold.sh URL [rounds, default 60] [slot_bytes, default 67108864]
set -euo pipefail
url=${1:?usage: bench/lease-hold.sh URL-of-a-scratch-pgq-database [rounds]}
rounds=${2:-60}
slot_bytes=${3:-67108864}
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; psql "$url" -X -qc "DROP PROCEDURE IF EXISTS public.pgq_lease_hold(text, text, int, bigint, jsonb)" >/dev/null 2>&1 || true' EXIT

if [ "$(psql "$url" -X -qAtc 'SELECT EXISTS (SELECT FROM pgq.jobs)')" != f ]; then
    echo "lease-hold: pgq.jobs in $url is not empty; run this in a scratch database" >&2
    exit 1
fi

psql "$url" -X -q -o /dev/null -v ON_ERROR_STOP=1 <<'SQL'
SET client_min_messages = warning;
SELECT pgq.define_job('lease_hold_overlap', queue => 'lease_hold_overlap',
                      middleware => '[{"without_overlapping": {"by": ["k"]}}]');
SELECT pgq.define_job('lease_hold_plain', queue => 'lease_hold_plain');
CREATE OR REPLACE PROCEDURE public.pgq_lease_hold(job text, queue text, rounds int, slot_bytes bigint, INOUT times jsonb DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; u uuid[]; tk uuid[]; r jsonb := '[]'; c jsonb := '[]';
BEGIN
    FOR i IN 1 .. rounds LOOP
        PERFORM pgq.dispatch_many(job, ARRAY(SELECT jsonb_build_object('k', g) FROM generate_series(1, 1000) g));
        COMMIT;
        t0 := clock_timestamp();
        SELECT array_agg(x.uuid), array_agg(x.lease_token) INTO u, tk FROM pgq.reserve('lease-hold', ARRAY[queue], 1000) x;
        r := r || to_jsonb(extract(epoch FROM clock_timestamp() - t0) * 1000);
        COMMIT;
        t0 := clock_timestamp();
        PERFORM pgq.complete(u, tk);
        c := c || to_jsonb(extract(epoch FROM clock_timestamp() - t0) * 1000);
        COMMIT;
        PERFORM pgq.rotate(slot_bytes => slot_bytes);
        COMMIT;
    END LOOP;
    times := jsonb_build_object('reserve', r, 'complete', c);
END $$;
SQL

run() { # label job hold(yes|no)
    psql "$url" -X -qc 'TRUNCATE pgq.jobs, pgq.attempts, pgq.overlap_locks' >/dev/null
    psql "$url" -X -qc 'VACUUM pgq.jobs, pgq.attempts, pgq.overlap_locks' >/dev/null
    if [ "$3" = yes ]; then
        psql "$url" -X -qc 'BEGIN; SELECT pg_current_xact_id(); SELECT pg_sleep(3600); COMMIT' >/dev/null 2>&1 &
        holder=$!
        sleep 1
    fi
    psql "$url" -X -qAtc "CALL public.pgq_lease_hold('$2', '$2', $rounds, $slot_bytes)" | python3 -c '
import json, statistics as st, sys
label = sys.argv[1]
d = json.load(sys.stdin)
for what, v in d.items():
    n = len(v)
    print(f"{label:<16} {what:<9} ms: rounds 2-6 {st.median(v[1:6]):6.1f} | middle {st.median(v[n//2-2:n//2+3]):6.1f} | last 5 {st.median(v[-5:]):6.1f}")
' "$1"
    if [ -n "$holder" ]; then
        # what a lookup of one reused key reads under the hold, and the leases' size
        pages=$(psql "$url" -X -qAt -c 'SET enable_seqscan = off' \
            -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) SELECT * FROM pgq.overlap_locks WHERE key = '$2:[5]'" |
            python3 -c 'import json, sys; p = json.load(sys.stdin)[0]["Plan"]; print(p["Shared Hit Blocks"] + p["Shared Read Blocks"])')
        size=$(psql "$url" -X -qAtc "SELECT pg_size_pretty(coalesce(sum(pg_total_relation_size(c.oid)), 0))
            FROM pg_class c WHERE c.relname LIKE 'overlap_locks%' AND c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'p')")
        printf '%-16s a lookup of one key reads %s pages; pgq.overlap_locks is %s\n' "$1" "$pages" "$size"
        psql "$url" -X -qAtc "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3600)%' AND pid <> pg_backend_pid()" >/dev/null
        wait "$holder" 2>/dev/null || true
        holder=
    fi
}

run overlap lease_hold_overlap no
run "overlap, held" lease_hold_overlap yes
run "plain, held" lease_hold_plain yes
