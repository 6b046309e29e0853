#!/usr/bin/env bash
# The demo's steps on a bed that is up: deploy examples/foreman-like with refitctl, publish a
# z-stream image, update (probing every service every 20 ms, so each one's downtime is
# measured), upgrade to the next stream, and print the status table. examples/demo/run.sh brings
# the bed up around it; tests/integration/test_demo_output.yml runs it as it is, over the bed's
# own connection and over SSH, and checks its output against the host's own record of events.
# usage: steps.sh INVENTORY (one host, as refitctl -i takes it)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TB=$REPO/tests/testbed/testbed.sh
CTL=$REPO/target/release/refitctl
DEPLOYMENT=$REPO/examples/foreman-like/deployment.yml
INVENTORY=${1:?usage: steps.sh INVENTORY}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

eval "$("$TB" env)"
WORK=$(mktemp -d "$REFIT_TESTBED_RUN/demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export REFITCTL_STATE_DIR=$WORK/refitctl
base=$(sed -n 's/.*refit_port_base=\([0-9]*\).*/\1/p' "$INVENTORY" | head -n 1)
names=(db app api content worker@1 worker@2 worker@3)
ports=($((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) "$(((base + 10) / 10))1" "$(((base + 10) / 10))2" "$(((base + 10) / 10))3")
registry=127.0.0.1:5000
for svc in db app api content worker; do
    for stream in 1.0 1.1; do
        skopeo copy -q --src-tls-verify=false --dest-tls-verify=false \
            "docker://$registry/svc:$stream" "docker://$registry/foreman-$svc:$stream"
    done
done

ctl() {
    local rc=0
    "$CTL" "$@" || rc=$?
    [ "$rc" -eq 0 ] || { echo "refitctl $1 exited $rc" >&2; exit "$rc"; }
}

# Runs refitctl under a probe of every service, then prints each one's downtime.
probed() {
    local log=$WORK/probe-$1.log stop=$WORK/probe-$1.stop
    "$REPO/tools/probes/probe.py" "$log" "$stop" 20 300 "${ports[@]}" &
    local probe=$!
    ctl "$@"
    touch "$stop"
    wait "$probe" || true
    echo "downtime, from a probe of every service every 20 ms:"
    "$REPO/tools/probes/downtime.py" "$log" "${names[@]}" |
        while read -r name ms gaps; do printf '  %-10s %6s ms  (%s gaps)\n' "$name" "$ms" "$gaps"; done
}

step "2/7 Deploy examples/foreman-like, stream 1.0"
ctl deploy -i "$INVENTORY" --deployment "$DEPLOYMENT"

step "3/7 Publish a z-stream image of content (1.0.1, under foreman-content:1.0), and plan"
"$TB" publish "$registry/foreman-content:1.0" 1.0.1
ctl plan

step "4/7 Update, with the parameters refitctl remembered"
probed update

step "5/7 Upgrade to the next stream, 1.1"
probed upgrade --to 1.1

step "6/7 Status"
ctl status
