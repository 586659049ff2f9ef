#!/usr/bin/env bash
# Every target of bench/RESULTS.md in one sitting (about 90 minutes on the 2-core VM),
# one benchmark binary, one log directory. Each step is a bench invocation whose full
# output is kept in $out/<step>.log; the summary table of each is printed as it ends.
#   drain        100k backlog (loads, the default), pgq and River tuned, 5 runs
#   drain-rows   the same with -pgq-load-min 0: the backlog as one row per job
#   bulk         DispatchMany and ByCopy against InsertMany and InsertManyFast, 5 runs
#   bulk-shape   one dispatch of 20,000 and of 200,000 1 KiB payloads, jsonb[] and
#                ByCopy: time per payload and the ratio of the two (1: linear), 3 runs
#   latency      one job about every 143 ms (7/s) for 30 s to idle workers, dispatch
#                commit to handler start: pgq, River at defaults and River tuned, 5 runs
#   middleware   plain, without_overlapping, rate_limited, throttles_exceptions, 3 runs
#   concurrency  concurrency_limited (one key, limit 40, 4 workers x 10) and the same drain
#                without the limit, 3 runs
#   sql          SQL handlers: a 20,000-job drain whose handler inserts a row, pgbench's same
#                INSERT, the Go drain; a lone SQL job's dispatch to start at 50/s, 3 runs
#   burst        $BURST_PAIRS pairs (default 3), alternating: 60 s clean, 60 s at 6x 5,000/s,
#                60 s recovery (pgq); then the recovery's reference, 850,000 rows
#                preloaded on a clean table. Prints each pair's ratio of the two
#                drain rates and their median (a single pair varies by about 10 %)
#   tail         20,000 jobs/s for 5 minutes, pgq and River (p99 per 10 s window)
#   pressure     clean, a 10-minute idle-tx hold, readers, high-load, recovery, both
# Usage: [BURST_PAIRS=N] bench/targets.sh [log directory, default /tmp/pgq-targets] [steps...]
# The bench connects to $DATABASE_URL (or postgres@127.0.0.1:5432) and makes its own
# bench_* databases; it never touches other databases.
set -euo pipefail
out=${1:-/tmp/pgq-targets}
shift || true
steps=${*:-drain drain-rows bulk bulk-shape latency middleware concurrency sql burst tail pressure}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
bin=$out/bench
(cd "$here" && go build -o "$bin" .)
git -C "$here" rev-parse --short HEAD > "$out/commit"

run() {
    local step=$1
    shift
    echo "== $step ($(date -u +%H:%M:%S)): bench $*"
    if ! "$bin" "$@" > "$out/$step.log" 2>&1; then
        echo "   $step FAILED, see $out/$step.log"
    fi
    grep -E '^\| [0-9]|^\| pgq only|^FAILED|verify' "$out/$step.log" | cut -c1-260 || true
}

# drain_in PHASE LOG: the rate at which that phase of a pressure log drained its backlog
# (its figure "draining at N jobs/s"); none when no 10 s window of it ended with one.
drain_in() {
    grep -o "$1: [^|]*" "$2" | grep -o 'draining at [0-9]*' | grep -o '[0-9]*$' || true
}

for step in $steps; do
    case $step in
    drain) run drain -runs 5 -scenarios drain -systems pgq,river ;;
    drain-rows) run drain-rows -runs 5 -scenarios drain -systems pgq,river -pgq-load-min 0 ;;
    bulk) run bulk -runs 5 -scenarios bulk -systems pgq,river -quiet-cores 0.2 -quiet-max 20s ;;
    bulk-shape) run bulk-shape -runs 3 -scenarios bulk-shape -systems pgq -quiet-cores 0.2 -quiet-max 20s ;;
    latency)
        run latency -runs 5 -scenarios latency -systems pgq,river -latency-rate 7 -latency-duration 30s ;;
    middleware) run middleware -runs 3 -scenarios plain,mw-overlap,mw-ratelimit,mw-throttle -systems pgq ;;
    concurrency) run concurrency -runs 3 -scenarios mw-concurrency,mw-concurrency-off -systems pgq -extra-jobs 20000 -concurrency 40 ;;
    sql) run sql -runs 3 -scenarios drain-sql-insert,pgbench-insert,drain-go,latency-sql -systems pgq -sql-jobs 20000 -jobs 20000 ;;
    burst)
        ratios=()
        for pair in $(seq "${BURST_PAIRS:-3}"); do
            run burst-$pair -runs 1 -scenarios pressure -systems pgq -db bench_pgq_burst \
                -pressure-phases clean,high-load,recovery -pressure-rate 5000 -pressure-high-factor 6 \
                -pressure-phase 60s -quiet-cores 0.3 -quiet-max 30s
            run burst-ref-$pair -runs 1 -scenarios pressure -systems pgq -db bench_pgq_burst -pgq-load-min 0 \
                -pressure-phases recovery -pressure-preload 850000 -pressure-rate 5000 -pressure-phase 90s \
                -quiet-cores 0.3 -quiet-max 30s
            # The burst's backlog as the recovery drains it; when the workers drained it
            # while the burst still arrived (no recovery window ended with a backlog),
            # as the high-load phase drained it.
            phase=recovery
            after=$(drain_in recovery "$out/burst-$pair.log")
            if [ -z "$after" ]; then
                phase=high-load
                after=$(drain_in high-load "$out/burst-$pair.log")
            fi
            clean=$(drain_in recovery "$out/burst-ref-$pair.log")
            ratios+=("$(awk -v a="$after" -v c="$clean" 'BEGIN { if (a > 0 && c > 0) printf "%.3f", a / c; else print "none" }')")
            echo "   burst pair $pair: $phase draining at ${after:-?} jobs/s, clean backlog at ${clean:-?}: ${ratios[-1]}"
        done
        # A pair whose log gave no rate ("none") is left out of the median, and the count says so.
        printf '%s\n' "${ratios[@]}" | awk '/^[0-9.]+$/' | sort -g |
            awk -v n="${#ratios[@]}" '{ r[NR] = $1 } END { printf "   burst: median of %d of %d pairs %s\n", NR, n, (NR ? r[int((NR + 1) / 2)] : "none") }' ;;
    tail)
        run tail -runs 1 -scenarios pressure -systems pgq,river -db bench_pgq_tail -river-db bench_river_tail \
            -pressure-phases clean -pressure-phase 5m -pressure-rate 20000 -pressure-concurrency 1000 -quiet-cores 0 ;;
    pressure)
        run pressure -runs 1 -scenarios pressure -systems pgq,river -db bench_pgq_pressure \
            -river-db bench_river_pressure -pressure-phases clean,idle-tx,readers,high-load,recovery \
            -pressure-phase 60s -pressure-hold 10m -quiet-cores 0.3 -quiet-max 30s ;;
    *)
        echo "targets: unknown step $step" >&2
        exit 2 ;;
    esac
done
echo "== done ($(date -u +%H:%M:%S)); logs in $out"
