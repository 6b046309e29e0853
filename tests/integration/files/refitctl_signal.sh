#!/usr/bin/env bash
# Starts `refitctl update ARGS...` and, once its start phase has begun, sends it SIGNAL (to
# refitctl alone, as a terminal's Ctrl-C or a service manager would). Prints key=value lines
# for the scenario: the exit code, and whether anything of ansible-playbook's group was left.
# Every wait is bounded.
# Usage: refitctl_signal.sh REFITCTL DIR SIGNAL [ARGS...], with REFITCTL_STATE_DIR set.
set -uo pipefail
ctl=$1 dir=$2 sig=$3
shift 3

"$ctl" update "$@" > "$dir/signalled.out" 2> "$dir/signalled.err" &
ctl_pid=$!
child=
for _ in $(seq 100); do
    child=$(pgrep -P "$ctl_pid" | head -1)
    [ -z "$child" ] || break
    sleep 0.1
done
started=0
for _ in $(seq 1200); do
    if grep -qE '^ +[0-9.]+s +\* +start ' "$dir/signalled.out"; then
        started=1
        break
    fi
    kill -0 "$ctl_pid" 2> /dev/null || break
    sleep 0.1
done
echo "start_phase_seen=$started"
kill "-$sig" "$ctl_pid"
wait "$ctl_pid"
echo "rc=$?"
echo "group_left=$( [ -n "$child" ] && pgrep -g "$child" | wc -l || echo 0)"
echo "err=$(tr '\n' ' ' < "$dir/signalled.err")"
