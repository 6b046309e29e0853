#!/usr/bin/env bash
# Scenario 8 of the bench alone (issue 40): PostgreSQL 15 to 17 under Pulp, at each size of
# REFIT_BENCH_PG_SIZES (default "40 300", in MB), each size on its own test host (th1, th2, ...)
# at the same time, medians of 3 runs of each way; then section 8 of bench/RESULTS.md is replaced
# by one rendered from them all, the rest of the file kept. It brings up the bed REFIT_TESTBED_RUN
# names, with Pulp, and takes it down at the end, also when a run fails. In a lane:
#   tests/testbed/lane.sh L bench/pg_major.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
TB=$REPO/tests/testbed/testbed.sh
read -ra sizes <<< "${REFIT_BENCH_PG_SIZES:-40 300}"
hosts=()
for i in "${!sizes[@]}"; do hosts+=("th$((i + 1))"); done
REFIT_PULP=1 "$TB" up "${hosts[@]}"
trap '"$TB" down' EXIT
eval "$("$TB" env)"
# The foremanctl way's playbooks use containers.podman: the one of bench/run.sh's pin.
podman_collections=$("$REPO/tools/containers_podman.sh")
export ANSIBLE_COLLECTIONS_PATH="$REFIT_TESTBED_RUN/collections:$podman_collections"
make -C "$REPO" --no-print-directory -s collection > /dev/null
rm -f "$REFIT_TESTBED_RUN"/pgmajor-partial-*.json
pids=()
for i in "${!sizes[@]}"; do
    h=${hosts[$i]}
    REFIT_BENCH_HOST=$h REFIT_BENCH_PG_SIZES=${sizes[$i]} python3 "$REPO/bench/bench.py" --only pgmajor \
        "$REFIT_TESTBED_RUN/pgmajor-$h.md" > "$REFIT_TESTBED_RUN/logs/pgmajor-$h.log" 2>&1 &
    pids+=("$!")
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
# What every host measured, a failed one's finished runs included (the section says how many).
python3 "$REPO/bench/pg_major_bench.py" "$REPO/bench/RESULTS.md" "$REFIT_TESTBED_RUN"/pgmajor-partial-*.json
exit "$status"
