#!/usr/bin/env bash
# Runs a command every 5 s in the background, beside a scenario's rerun, as an operator's
# `refitctl status` in a loop would: at most 60 times (5 min), until stopped. Its runs are
# counted, so the scenario can show they happened.
#   beside.sh start STATEFILE CMD...   prints nothing; the loop's pid goes to STATEFILE
#   beside.sh stop STATEFILE           stops the loop; prints how many runs ended, and their codes
set -euo pipefail
action=$1 state=$2
shift 2
case $action in
start)
    : > "$state.runs"
    # The loop's script is single-quoted on purpose: the inner bash expands its own arguments.
    # shellcheck disable=SC2016
    setsid bash -c '
        state=$1; shift
        for _ in $(seq 60); do
            "$@" > /dev/null 2>&1; echo $? >> "$state.runs"
            sleep 5
        done' beside "$state" "$@" < /dev/null > /dev/null 2>&1 &
    echo $! > "$state"
    ;;
stop)
    kill -- "-$(cat "$state")" 2> /dev/null || true
    echo "runs=$(wc -l < "$state.runs") codes=$(sort -u "$state.runs" | tr '\n' ' ')"
    rm -f "$state" "$state.runs"
    ;;
*) echo "usage: $0 start|stop STATEFILE [CMD...]" >&2 && exit 2 ;;
esac
