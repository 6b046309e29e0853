#!/usr/bin/env bash
# The one test command (README, "Testing"): static checks, unit tests, ansible-test sanity, the
# integration suite on a testbed it brings up and always tears down (also when a test fails),
# then the molecule scenarios, each on a testbed of its own.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
step() { printf '\n== %s\n' "$*"; }
timed() {
    local name=$1 t0
    shift
    t0=$(date +%s)
    "$@"
    echo "-- $name took $(($(date +%s) - t0)) s"
}

# The testbed comes up in the background while the Rust checks run: on a fresh machine it is
# mostly apt, debootstrap and pip (about 2 minutes), the checks mostly CPU.
bed_log=$(mktemp)
# REFIT_PULP=1: the Pulp and PostgreSQL images test_pulp needs (about 75 s the first time, cached
# by their recipe after).
(timed testbed env REFIT_PULP=1 tests/testbed/testbed.sh up th1 th2) > "$bed_log" 2>&1 &
bed_pid=$!
teardown() {
    # Never tear down under a bed still coming up: wait for it first.
    wait "$bed_pid" 2> /dev/null || true
    step "testbed down"
    tests/testbed/testbed.sh down
    rm -f "$bed_log"
}
trap teardown EXIT

step "cargo fmt --check"
timed fmt cargo fmt --all --check
step "cargo clippy -- -D warnings"
timed clippy cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
timed cargo-test cargo test --workspace --locked

step "testbed up (started before the Rust checks)"
bed_rc=0
wait "$bed_pid" || bed_rc=$?
cat "$bed_log"
[ "$bed_rc" -eq 0 ] || exit "$bed_rc"
eval "$(tests/testbed/testbed.sh env)"
step "collection and refitctl"
timed collection make --no-print-directory collection refitctl
# make modules checked the modules against the glibc ceiling; the check must also refuse a
# binary linked against this machine's newer glibc, as cargo test's debug build is.
step "glibc ceiling refuses a binary built for this machine"
if make --no-print-directory -s glibc-check GLIBC_CHECKED=target/debug/stop_services 2> /dev/null; then
    echo "the glibc ceiling check passed target/debug/stop_services, which needs this machine's glibc" >&2
    exit 1
fi
step "collection tarball"
tools/tarball-contents.sh "build/refit-containers-$(tr -d ' \n' < VERSION).tar.gz"
step "docs (antsibull-docs, any warning fails)"
timed docs make --no-print-directory docs
step "ansible-lint (production profile)"
timed ansible-lint env ANSIBLE_COLLECTIONS_PATH="$REFIT_TESTBED_RUN/collections" ansible-lint --nocolor roles playbooks tests/integration examples extensions
# Sanity needs no bed: it runs beside the integration suite, which mostly waits on services,
# niced so the scenarios keep the CPU they wait with (on a fresh machine it is 5 to 7 minutes,
# mostly a venv per sanity test per core).
step "ansible-core matrix, part 1: sanity on each supported core (beside the integration suite)"
sanity_log=$(mktemp)
(timed core-sanity nice -n 19 tools/core-matrix.sh sanity) > "$sanity_log" 2>&1 &
sanity_pid=$!
echo "started; its lines follow the integration suite's"
step "integration"
timed integration tests/integration/run.sh
step "ansible-core matrix, part 2: a flow on each older core"
timed core-flows tools/core-matrix.sh flows
step "ansible-core matrix, part 1: sanity (ran beside the integration suite)"
sanity_rc=0
wait "$sanity_pid" || sanity_rc=$?
cat "$sanity_log"
rm -f "$sanity_log"
[ "$sanity_rc" -eq 0 ] || exit "$sanity_rc"
# Users reach their hosts over SSH; the flows again, through each test host's sshd.
step "flow scenarios over real SSH"
timed flows-ssh env ANSIBLE_INVENTORY="$REFIT_TESTBED_RUN/inventory-ssh.ini" REFIT_TEST_LOGS="$REFIT_TESTBED_RUN/logs/ssh" \
    tests/integration/run.sh test_flow_update_upgrade.yml
# Molecule's create and destroy bring up and tear down a testbed of their own.
step "testbed down, for molecule"
timed testbed-down tests/testbed/testbed.sh down
step "molecule test, every scenario"
timed molecule molecule test --all
