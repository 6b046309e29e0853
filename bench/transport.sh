#!/usr/bin/env bash
# The no-op update over real SSH and over the local connection, refit beside the foremanctl way
# (bench/transport.py); writes bench/TRANSPORT.md. Needs a bed that is up (testbed.sh up th1) and
# leaves it up. The bench venv (containers.podman for the foremanctl way) is bench/run.sh's.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-/var/cache/refit-testbed}
eval "$("$REPO/tests/testbed/testbed.sh" env)"
[ -f "$REFIT_TESTBED_RUN/inventory-ssh.ini" ] || { echo "no bed is up; run: tests/testbed/testbed.sh up th1" >&2; exit 1; }
"$REPO/tools/venv.sh" "$CACHE/bench-venv" "$(sed -n "s/^BENCH_SPEC='\(.*\)'$/\1/p" "$REPO/bench/run.sh")"
make -C "$REPO" --no-print-directory -s collection > /dev/null
export PATH="$CACHE/bench-venv/bin:$PATH"
python3 "$REPO/bench/transport.py" "$REPO/bench/TRANSPORT.md"
