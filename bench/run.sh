#!/usr/bin/env bash
# `make bench`: refit against the foremanctl way (containers.podman), the naive flow and podman
# auto-update, on one test host, with the limit (a bare systemctl restart) measured in the same
# go, the no-op update over SSH (bench/transport.py) and over a fleet (bench/fleet_bench.py). Prints a markdown table and writes it
# to bench/RESULTS.md. The testbed is torn down at the
# end, also when a scenario fails. `--quick` runs fewer repetitions (a smoke of the script).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
TB=$REPO/tests/testbed/testbed.sh
CACHE=${CACHE:-/var/cache/refit-testbed}
BENCH_VENV=$CACHE/bench-venv
# The `ansible` package brings containers.podman for baseline (a); its ansible-core is the
# same minor as the testbed's, and both refit and the baselines run on it.
BENCH_SPEC='ansible==12.3.0'

# REFIT_PULP=1: scenario 7 deploys Pulp on PostgreSQL (its images are cached by their recipe).
REFIT_PULP=1 "$TB" up th1
trap '"$TB" down' EXIT
eval "$("$TB" env)"
if [ "$(cat "$BENCH_VENV/.refit-spec" 2>/dev/null)" != "$BENCH_SPEC" ]; then
    rm -rf "$BENCH_VENV"
    python3 -m venv "$BENCH_VENV"
    "$BENCH_VENV/bin/pip" install -q --disable-pip-version-check "$BENCH_SPEC"
    echo "$BENCH_SPEC" > "$BENCH_VENV/.refit-spec"
fi
make -C "$REPO" --no-print-directory -s collection > /dev/null
export PATH="$BENCH_VENV/bin:$PATH"
"$TB" publish 127.0.0.1:5000/bench-worker:1.0 1.0.0
python3 "$REPO/bench/bench.py" "$@" "$REPO/bench/RESULTS.md"
# The no-op update over real SSH beside the local connection, on the same bed, into its own
# file, then appended to RESULTS.md so one file holds the whole run.
python3 "$REPO/bench/transport.py" "$REPO/bench/TRANSPORT.md"
{ echo; sed 's/^# /## /' "$REPO/bench/TRANSPORT.md"; } >> "$REPO/bench/RESULTS.md"
# The fleet: fl1..fl30 booted beside th1, the no-op and a z-stream over 1, 10 and 30 hosts.
python3 "$REPO/bench/fleet_bench.py" "$REPO/bench/FLEET.md"
{ echo; sed 's/^# /## /' "$REPO/bench/FLEET.md"; } >> "$REPO/bench/RESULTS.md"
