#!/usr/bin/env bash
# Starts `refitctl update`, then a second one at once, and sends the first SIGTERM (to it alone,
# as timeout, systemd or CI would) once its start phase has begun. Prints what happened as
# key=value lines for test_refitctl_signals.yml. Every wait is bounded.
# Usage: refitctl_sigterm.sh REFITCTL DIR, with REFITCTL_STATE_DIR set by the caller.
set -uo pipefail
# shellcheck source=tests/integration/files/refitctl_waits.sh
. "$(dirname "$0")/refitctl_waits.sh"
ctl=$1 dir=$2

"$ctl" update > "$dir/first.out" 2> "$dir/first.err" &
first=$!
echo "first_pid=$first"
# refitctl takes its lock before it starts ansible-playbook: once the child runs, the lock is held.
child=$(first_child "$first")
if [ -z "$child" ]; then
    echo "error=refitctl started no ansible-playbook within 10 s"
    kill -TERM "$first"
    wait "$first"
    exit 1
fi
echo "child_pid=$child"

"$ctl" update > "$dir/second.out" 2> "$dir/second.err"
echo "second_rc=$?"
echo "second_err=$(tr '\n' ' ' < "$dir/second.err")"
# The progress callback's first line: the second must not have started a play.
echo "second_progress=$(grep -c '^refit:' "$dir/second.out")"

wait_start_phase "$dir/first.out" "$first"

t0=$(date +%s%3N)
kill -TERM "$first"
wait "$first"
echo "first_rc=$?"
echo "stop_ms=$(($(date +%s%3N) - t0))"
# ansible-playbook leads a process group of its own: its forks and module runs are in it.
echo "group_left=$(pgrep -g "$child" | wc -l)"
echo "first_err=$(tr '\n' ' ' < "$dir/first.err")"
