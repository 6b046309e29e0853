#!/usr/bin/env bash
# Runs every scenario playbook (tests/integration/test_*.yml, or those named) against the
# testbed that is up, and prints one line per scenario and a closing "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
eval "$("$REPO/tests/testbed/testbed.sh" env)"
# tools/core-matrix.sh runs a scenario on another ansible-core: that venv's bin comes first.
[ -z "${REFIT_ANSIBLE_BIN:-}" ] || PATH=$REFIT_ANSIBLE_BIN:$PATH
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
LOGS=${REFIT_TEST_LOGS:-$REFIT_TESTBED_RUN/logs}
# Scenarios that run a playbook of their own keep its output beside their log.
export REFIT_TEST_LOGS=$LOGS
mkdir -p "$LOGS"

scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || mapfile -t scenarios < <(ls "$HERE"/test_*.yml)
passed=0 failed=0 failed_names=()
for s in "${scenarios[@]}"; do
    [ -f "$s" ] || s=$HERE/$s
    name=$(basename "$s" .yml)
    t0=$(date +%s%3N)
    # A play whose hosts are not in the inventory "passes" having done nothing; that is a failure.
    if ansible-playbook -e "refit_repo=$REPO" "$s" > "$LOGS/$name.log" 2>&1 &&
        ! grep -q 'skipping: no hosts matched' "$LOGS/$name.log"; then
        passed=$((passed + 1))
        echo "PASS $name ($(($(date +%s%3N) - t0)) ms)"
    else
        failed=$((failed + 1))
        failed_names+=("$name")
        echo "FAIL $name ($(($(date +%s%3N) - t0)) ms); log: $LOGS/$name.log"
        grep -E 'FAILED!|fatal:|msg' "$LOGS/$name.log" | tail -n 15 | sed 's/^/    /'
    fi
done
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
