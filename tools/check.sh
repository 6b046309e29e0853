#!/usr/bin/env bash
# `make check`: the quick tier, for a change that needs no host to prove it. No circle of imports
# among a module dir's files (tools/import_cycles.py), formatting, clippy,
# the Rust unit and binary tests, the Python unit tests (tests/unit/python) and ansible-lint's
# production profile; no root, no testbed, no network once its venv is made.
#
#   tools/check.sh
#
# ansible-core and ansible-lint come from PyPI, pinned, in a venv of the caller's own
# ($REFIT_CHECK_CACHE, else ~/.cache/refit), so a user without root can run it.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
CACHE=${REFIT_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/refit}
VENV=$CACHE/check-venv
# The versions make test's testbed venv resolves to, so both tiers lint alike.
SPECS=(ansible-core==2.19.14 'cryptography<51' ansible-lint==25.12.2)

# shellcheck source=tools/steps.sh
. tools/steps.sh
t_start=$(date +%s)

step "no circle of imports among a module dir's files"
# migrate's judge/pending and podman's api/oneoff are the two left; their files are untied in
# their own changes, which then drop the --known line.
timed import-cycles python3 tools/import_cycles.py \
    --known core/src/migrate:judge,pending --known core/src/podman:api,oneoff \
    core/src modules/src refitctl/src
rust_checks

step "venv (ansible-core, ansible-lint)"
timed venv tools/venv.sh "$VENV" "${SPECS[@]}"
export PATH=$VENV/bin:$PATH

# The callback and the action plugins import ansible; the venv's python has it.
python_unit

step "ansible-lint (production profile)"
# The scenarios name refit.containers' modules by FQCN: the checkout is the collection. The
# collections path lives outside the repo, since a link to the checkout inside it would loop.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/ansible_collections/refit"
ln -s "$REPO" "$scratch/ansible_collections/refit/containers"
# examples/foremanctl-like deploys with containers.podman, from the pinned ansible wheel.
podman_collections=$(PYTHON=$VENV/bin/python tools/containers_podman.sh)
timed ansible-lint env ANSIBLE_COLLECTIONS_PATH="$scratch:$podman_collections" ansible-lint --offline --nocolor \
    roles playbooks tests/integration examples extensions

echo "check: green in $(($(date +%s) - t_start)) s"
