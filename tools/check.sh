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

# ansible-lint runs beside the Rust checks. Most of its work is `ansible-playbook
# --syntax-check`, one subprocess per playbook and role, each most of a second of CPU spent
# loading ansible; on a 2-core machine that others share, it mostly waits for its turn at the
# CPU, and it waited the Rust checks out first when it ran after them.
step "venv (ansible-core, ansible-lint)"
timed venv tools/venv.sh "$VENV" "${SPECS[@]}"
export PATH=$VENV/bin:$PATH

# What the production profile lints: everything of the collection that Ansible reads.
LINTED=(roles playbooks tests/integration examples extensions)
# The scenarios name refit.containers' modules by FQCN: the checkout is the collection. The
# collections path lives outside the repo, since a link to the checkout inside it would loop.
scratch=$(mktemp -d)
lint_pid=
# A check that fails ends the lint still running beside it (its own process group).
finish() {
    [ -z "$lint_pid" ] || kill -- -"$lint_pid" 2> /dev/null || true
    [ -z "$lint_pid" ] || wait "$lint_pid" 2> /dev/null || true
    rm -rf "$scratch"
}
trap finish EXIT
mkdir -p "$scratch/ansible_collections/refit"
ln -s "$REPO" "$scratch/ansible_collections/refit/containers"
# examples/foremanctl-like deploys with containers.podman, from the pinned ansible wheel.
podman_collections=$(PYTHON=$VENV/bin/python tools/containers_podman.sh)

# Everything the lint's answer depends on: the pinned tools, the linted files, the collection's
# plugins and metadata (module docs, routing) and the lint's config. A tree that hashes as the
# last green run's did is not linted again, since the answer would be the same; set
# REFIT_CHECK_LINT=always to lint it anyway.
lint_key() {
    {
        printf '%s\n' "${SPECS[@]}" "$podman_collections"
        find "${LINTED[@]}" plugins meta galaxy.yml .ansible-lint -type f \
            -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum
    } | sha256sum | cut -d' ' -f1
}
green=$CACHE/ansible-lint.green
key=$(lint_key)
lint_log=$scratch/ansible-lint.log
if [ "${REFIT_CHECK_LINT:-}" != always ] && [ "$(cat "$green" 2> /dev/null)" = "$key" ]; then
    echo "ansible-lint: these files passed it as they are (key $key), not linted again" > "$lint_log"
else
    rm -f "$green"
    set -m
    (timed ansible-lint env ANSIBLE_COLLECTIONS_PATH="$scratch:$podman_collections" \
        ansible-lint --offline --nocolor "${LINTED[@]}" && echo "$key" > "$green") > "$lint_log" 2>&1 &
    lint_pid=$!
    set +m
fi

rust_checks

# The callback and the action plugins import ansible; the venv's python has it.
python_unit

step "ansible-lint (production profile)"
lint_rc=0
[ -z "$lint_pid" ] || wait "$lint_pid" || lint_rc=$?
lint_pid=
cat "$lint_log"
[ "$lint_rc" = 0 ] || exit "$lint_rc"

echo "check: green in $(($(date +%s) - t_start)) s"
