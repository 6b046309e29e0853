# shellcheck shell=bash
# The steps `make check` (tools/check.sh) and `make test` (tests/run.sh) share, sourced by both:
# a step's heading, its timing, and the Rust checks both run first.

step() { printf '\n== %s\n' "$*"; }

# Keeps the command's status: called as `timed ... || rc=$?`, where set -e does not reach into
# it, a bare "$@" followed by the echo would report every failure as a success.
timed() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s)
    "$@" || rc=$?
    echo "-- $name took $(($(date +%s) - t0)) s"
    return "$rc"
}

# No circle of imports among a module dir's files, formatting, clippy with warnings fatal, and
# every Rust test of the workspace.
rust_checks() {
    step "no circle of imports among a module dir's files"
    timed import-cycles python3 tools/import_cycles.py core/src modules/src refitctl/src
    step "cargo fmt --check"
    timed fmt cargo fmt --all --check
    step "cargo clippy -- -D warnings"
    timed clippy cargo clippy --workspace --all-targets --locked -- -D warnings
    step "cargo test"
    timed cargo-test cargo test --workspace --locked
}

# The Python unit tests (the callback, the action's helpers, the bench's probes); the python3 on
# PATH must have ansible.
python_unit() {
    step "Python unit tests (tests/unit/python)"
    timed python-unit python3 -m unittest discover -s tests/unit/python -t tests/unit/python
}
