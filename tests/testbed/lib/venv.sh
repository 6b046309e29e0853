# shellcheck shell=bash disable=SC2154
# The venv of Ansible and its tools the beds share. Sourced by tests/testbed/testbed.sh, whose
# settings these functions read; moved from it unchanged.

make_venv() {
    if [ -x "$VENV/bin/ansible-playbook" ] && [ "$(cat "$VENV/.refit-spec" 2>/dev/null)" = "${PY_SPECS[*]}" ]; then
        log "venv: reusing $VENV"
        return
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_SPECS[@]}"
    echo "${PY_SPECS[*]}" > "$VENV/.refit-spec"
}
