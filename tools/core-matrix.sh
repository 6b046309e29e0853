#!/usr/bin/env bash
# The ansible-core matrix of `make test`: on each ansible-core that meta/runtime.yml supports,
# `ansible-test sanity` (tests/sanity/ignore-X.Y.txt) and one flow scenario against the testbed,
# one line per version with its time. The testbed's own venv is the newest core: the integration
# step runs every scenario on it, so here it gets sanity only. The others get a venv each, from
# PyPI, pinned, kept in the testbed's cache.
#
#   tools/core-matrix.sh [sanity|flows]   needs the collection built (make collection), and for
#                                          the flows the bed up; no argument runs both
#
# `make test` runs the two parts apart: sanity needs no bed, so it runs beside the integration
# suite (which mostly waits on services), and the flows after it.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${REFIT_TESTBED_CACHE:-/var/cache/refit-testbed}
CORES=(2.16.19 2.17.14 2.18.19)
FLOW=test_flow_update_upgrade.yml
eval "$("$REPO/tests/testbed/testbed.sh" env)"
LOGS=${REFIT_TEST_LOGS:-$REFIT_TESTBED_RUN/logs}
mkdir -p "$LOGS"

part=${1:-all}
case $part in
sanity | flows | all) ;;
*)
    echo "usage: $0 [sanity|flows]" >&2
    exit 2
    ;;
esac
passed=0 failed=0
# Runs NAME CMD..., logs to $LOGS/NAME.log, counts it, and sets `result` to "PASS|FAIL (N s)".
timed_check() {
    local name=$1 t0 rc
    shift
    t0=$(date +%s)
    "$@" > "$LOGS/$name.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        result="PASS ($(($(date +%s) - t0)) s)"
    else
        failed=$((failed + 1))
        result="FAIL ($(($(date +%s) - t0)) s; log: $LOGS/$name.log)"
    fi
}

bed_core=$("$CACHE/venv/bin/python" -c 'import ansible; print(ansible.__version__)')
if [ "$part" != flows ]; then
    timed_check "sanity-$bed_core" "$REPO/tests/sanity/run.sh"
    echo "ansible-core $bed_core (testbed venv): sanity $result; flows: every scenario, in the integration step"
fi
for core in "${CORES[@]}"; do
    venv=$CACHE/venv-core-${core%.*}
    t0=$(date +%s)
    if ! "$REPO/tools/venv.sh" "$venv" "ansible-core==$core" > "$LOGS/venv-$core.log" 2>&1; then
        failed=$((failed + 1))
        echo "ansible-core $core: FAIL making its venv; log: $LOGS/venv-$core.log"
        continue
    fi
    line="ansible-core $core: venv $(($(date +%s) - t0)) s"
    if [ "$part" != flows ]; then
        timed_check "sanity-$core" env VENV="$venv" "$REPO/tests/sanity/run.sh"
        line="$line; sanity $result"
    fi
    if [ "$part" != sanity ]; then
        timed_check "flow-$core" env REFIT_ANSIBLE_BIN="$venv/bin" REFIT_TEST_LOGS="$LOGS/core-$core" \
            "$REPO/tests/integration/run.sh" "$FLOW"
        line="$line; ${FLOW%.yml} $result"
    fi
    echo "$line"
done
echo "core matrix ($part): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
