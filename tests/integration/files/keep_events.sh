#!/usr/bin/env bash
# ansible-playbook for refitctl (REFITCTL_ANSIBLE_PLAYBOOK) that keeps a copy of the events file
# refitctl handed it (REFIT_EVENTS_FILE) in KEEP_EVENTS_DIR: refitctl removes its own once it
# has read it, and a scenario wants to search what it read. The real ansible-playbook runs with
# the same arguments, output and exit code.
set -uo pipefail
ansible-playbook "$@"
rc=$?
cp -- "$REFIT_EVENTS_FILE" "$KEEP_EVENTS_DIR/" || exit 97
exit "$rc"
