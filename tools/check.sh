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

step() { printf '\n== %s\n' "$*"; }
# Keeps the command's status (set -e does not reach into a function called with ||).
timed() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s)
    "$@" || rc=$?
    echo "-- $name took $(($(date +%s) - t0)) s"
    return "$rc"
}
t_start=$(date +%s)

step "no circle of imports among a module dir's files"
# migrate's judge/pending and podman's api/oneoff are the two left; their files are untied in
# their own changes, which then drop the --known line.
timed import-cycles python3 tools/import_cycles.py \
    --known core/src/migrate:judge,pending --known core/src/podman:api,oneoff \
    core/src modules/src refitctl/src
step "cargo fmt --check"
timed fmt cargo fmt --all --check
step "cargo clippy -- -D warnings"
timed clippy cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
timed cargo-test cargo test --workspace --locked

step "venv (ansible-core, ansible-lint)"
timed venv tools/venv.sh "$VENV" "${SPECS[@]}"
export PATH=$VENV/bin:$PATH

step "Python unit tests (tests/unit/python)"
# The callback and the action plugins import ansible; the venv's python has it.
timed python-unit python3 -m unittest discover -s tests/unit/python -t tests/unit/python

step "ansible-lint (production profile)"
# The scenarios name refit.containers' modules by FQCN: the checkout is the collection. The
# collections path lives outside the repo, since a link to the checkout inside it would loop.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/ansible_collections/refit"
ln -s "$REPO" "$scratch/ansible_collections/refit/containers"
timed ansible-lint env ANSIBLE_COLLECTIONS_PATH="$scratch" ansible-lint --offline --nocolor \
    roles playbooks tests/integration examples extensions

echo "check: green in $(($(date +%s) - t_start)) s"
