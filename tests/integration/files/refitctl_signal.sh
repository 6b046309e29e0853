#!/usr/bin/env bash
# Starts `refitctl update ARGS...` and, once its start phase has begun, sends it SIGNAL (to
# refitctl alone, as a terminal's Ctrl-C or a service manager would). Prints key=value lines
# for the scenario: the exit code, and whether anything of ansible-playbook's group was left.
# Every wait is bounded.
# Usage: refitctl_signal.sh REFITCTL DIR SIGNAL [ARGS...], with REFITCTL_STATE_DIR set.
set -uo pipefail
# shellcheck source=tests/integration/files/refitctl_waits.sh
. "$(dirname "$0")/refitctl_waits.sh"
ctl=$1 dir=$2 sig=$3
shift 3

"$ctl" update "$@" > "$dir/signalled.out" 2> "$dir/signalled.err" &
ctl_pid=$!
child=$(first_child "$ctl_pid")
wait_start_phase "$dir/signalled.out" "$ctl_pid"
kill "-$sig" "$ctl_pid"
wait "$ctl_pid"
echo "rc=$?"
echo "group_left=$( [ -n "$child" ] && pgrep -g "$child" | wc -l || echo 0)"
echo "err=$(tr '\n' ' ' < "$dir/signalled.err")"
