#!/usr/bin/env bash
# The one test command (README, "Testing"): static checks, unit tests, ansible-test sanity, the
# integration suite on a testbed it brings up and always tears down (also when a test fails),
# then the molecule scenarios, each on a testbed of its own.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
# shellcheck source=tools/steps.sh
. tools/steps.sh

# The testbed comes up in the background while the Rust checks run: on a fresh machine it is
# mostly apt, debootstrap and pip (about 2 minutes), the checks mostly CPU.
bed_log=$(mktemp)
# REFIT_PULP=1: the Pulp and PostgreSQL images test_pulp needs (about 75 s the first time, cached
# by their recipe after).
# Then lane b's bed (tests/testbed/lane.sh): a second bed in a network namespace of its own,
# where part of the scenarios run beside the first bed's (about 20 s, the caches being warm).
LANE=b
# Where lane.sh keeps the lane's bed.
LANE_RUN=/var/tmp/refit-testbed-$LANE
in_lane() { tests/testbed/lane.sh "$LANE" "$@"; }
(timed testbed env REFIT_PULP=1 tests/testbed/testbed.sh up th1 th2 &&
    timed "testbed, lane $LANE" in_lane env REFIT_PULP=1 tests/testbed/testbed.sh up th1 th2) > "$bed_log" 2>&1 &
bed_pid=$!
lane_pid=
teardown() {
    # Never tear down under a bed still coming up, or a lane still running: wait for them first.
    wait "$bed_pid" 2> /dev/null || true
    [ -z "$lane_pid" ] || kill -- -"$lane_pid" 2> /dev/null || true
    [ -z "$lane_pid" ] || wait "$lane_pid" 2> /dev/null || true
    step "testbed down"
    tests/testbed/testbed.sh down
    in_lane tests/testbed/testbed.sh down
    tests/testbed/lane.sh "$LANE" --delete
    rm -f "$bed_log"
}
trap teardown EXIT

# The fresh-machine path (issue 42): `make demo`'s first phase builds the test service offline,
# which fails when the cargo home lacks the workspace's crates; every other step here runs with
# a warm cargo home and would not see it. About 10 s: one fetch into an empty cargo home.
step "fresh machine: the test service builds with an empty cargo home"
fresh_cargo=$(mktemp -d)
fresh_rc=0
timed fresh-cargo-home env CARGO_HOME="$fresh_cargo" tests/testbed/testbed.sh testsvc || fresh_rc=$?
rm -rf "$fresh_cargo"
[ "$fresh_rc" -eq 0 ] || exit "$fresh_rc"
rust_checks

step "testbed up (started before the Rust checks)"
bed_rc=0
wait "$bed_pid" || bed_rc=$?
cat "$bed_log"
[ "$bed_rc" -eq 0 ] || exit "$bed_rc"
eval "$(tests/testbed/testbed.sh env)"
# The callback and the action plugins import ansible: the testbed's venv, now on PATH, has it.
python_unit
# podman's own quadlet e2e files, read by refit and by the test hosts' quadlet (from the root
# file system the testbed just built): about ten seconds.
step "quadlet conformance (tests/conformance)"
timed conformance tests/conformance/run.sh
step "collection and refitctl"
timed collection make --no-print-directory collection refitctl
in_lane make --no-print-directory -s collection-install
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
# examples/foremanctl-like deploys with containers.podman, from the pinned ansible wheel.
podman_collections=$(tools/containers_podman.sh)
timed ansible-lint env ANSIBLE_COLLECTIONS_PATH="$REFIT_TESTBED_RUN/collections:$podman_collections" ansible-lint --nocolor roles playbooks tests/integration examples extensions
# Sanity needs no bed: it runs beside the integration suite, which mostly waits on services,
# niced so the scenarios keep the CPU they wait with (on a fresh machine it is 5 to 7 minutes,
# mostly a venv per sanity test per core).
step "ansible-core matrix, part 1: sanity on each supported core (beside the integration suite)"
sanity_log=$(mktemp)
(timed core-sanity nice -n 19 tools/core-matrix.sh sanity) > "$sanity_log" 2>&1 &
sanity_pid=$!
echo "started; its lines follow the integration suite's"
# The scenarios in two lanes at once, each on a bed of its own; most of their time is spent
# waiting on services, not on the CPU. Lane b takes the longest scenarios, then the older cores'
# flows, the flows over SSH and molecule; the first bed takes the rest. Balanced by the times
# the README lists, each lane takes about 20 minutes.
# The two rootless scenarios (about 3.5 minutes each) split between the lanes; the PostgreSQL
# major upgrades (Pulp deployed on PostgreSQL 15, then three failed upgrades to 17, and one
# through a power-off that a rerun finishes) run on lane b, whose bed has Pulp's images for
# test_pulp.
LANE_SCENARIOS=(test_pulp.yml test_fleet.yml test_refitctl.yml test_container_unit_rollback_history.yml
    test_rerun_at_once.yml test_takeover.yml test_same_tag_power_loss.yml test_rootless_reboot.yml
    test_pg_major_failures.yml test_pg_major.yml test_demo_output.yml test_power_loss_exit_lost.yml)
first_scenarios=()
for s in tests/integration/test_*.yml; do
    [[ " ${LANE_SCENARIOS[*]} " == *" ${s##*/} "* ]] || first_scenarios+=("${s##*/}")
done
lane_log=$(mktemp)
# Monitor mode for this one job: its own process group, which the teardown can stop whole.
set -m
(
    set -e
    timed "integration, lane $LANE" in_lane tests/integration/run.sh "${LANE_SCENARIOS[@]}"
    step "ansible-core matrix, part 2: a flow on each older core (lane $LANE)"
    timed core-flows in_lane tools/core-matrix.sh flows
    # Users reach their hosts over SSH; the flows again, through each test host's sshd.
    step "flow scenarios over real SSH (lane $LANE)"
    timed flows-ssh in_lane env ANSIBLE_INVENTORY="$LANE_RUN/inventory-ssh.ini" REFIT_TEST_LOGS="$LANE_RUN/logs/ssh" \
        tests/integration/run.sh test_flow_update_upgrade.yml
    # Molecule's create and destroy bring up and tear down a testbed of their own, in the lane.
    step "testbed down, for molecule (lane $LANE)"
    timed testbed-down in_lane tests/testbed/testbed.sh down
    step "molecule test, every scenario (lane $LANE)"
    timed molecule in_lane molecule test --all
    # Its own standard input, none: with job control on, a background job would share this one.
) < /dev/null > "$lane_log" 2>&1 &
lane_pid=$!
set +m
step "integration (lane $LANE beside it: ${LANE_SCENARIOS[*]}, then the core flows, SSH and molecule)"
integration_rc=0
timed integration tests/integration/run.sh "${first_scenarios[@]}" || integration_rc=$?
step "lane $LANE (ran beside the integration suite)"
lane_rc=0
wait "$lane_pid" || lane_rc=$?
lane_pid=
cat "$lane_log"
rm -f "$lane_log"
step "ansible-core matrix, part 1: sanity (ran beside the integration suite)"
sanity_rc=0
wait "$sanity_pid" || sanity_rc=$?
cat "$sanity_log"
rm -f "$sanity_log"
[ "$integration_rc" -eq 0 ] || exit "$integration_rc"
[ "$lane_rc" -eq 0 ] || exit "$lane_rc"
[ "$sanity_rc" -eq 0 ] || exit "$sanity_rc"
