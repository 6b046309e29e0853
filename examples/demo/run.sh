#!/usr/bin/env bash
# `make demo`: refit's whole job in one command, on a test host of this machine. It brings up the
# testbed, runs the demo's steps (examples/demo/steps.sh: deploy, z-stream update, upgrade,
# status) and tears everything down, also when a step fails.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TB=$REPO/tests/testbed/testbed.sh
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1/7 Bring up a test host: systemd, podman with quadlet, a registry (a fresh machine takes about 2 minutes)"
"$TB" up th1
trap 'step "7/7 Tear down"; "$TB" down' EXIT
eval "$("$TB" env)"
make -C "$REPO" --no-print-directory -s collection refitctl > /dev/null
grep '^th1 ' "$REFIT_TESTBED_RUN/inventory.ini" > "$REFIT_TESTBED_RUN/demo-hosts.ini"
"$REPO/examples/demo/steps.sh" "$REFIT_TESTBED_RUN/demo-hosts.ini"
