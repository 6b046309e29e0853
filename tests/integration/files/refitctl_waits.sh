# shellcheck shell=bash
# The waits refitctl_signal.sh and refitctl_sigterm.sh share, sourced by both. Each is bounded.

# Prints the pid of refitctl PID's first child (its ansible-playbook), waiting at most 10 s;
# nothing when none came.
first_child() {
    local child=
    for _ in $(seq 100); do
        child=$(pgrep -P "$1" | head -1)
        [ -z "$child" ] || break
        sleep 0.1
    done
    echo "$child"
}

# Prints start_phase_seen=1 once the progress callback's start phase line is in OUT, or
# start_phase_seen=0 when refitctl PID ended first or 120 s passed.
wait_start_phase() {
    local out=$1 pid=$2 started=0
    for _ in $(seq 1200); do
        if grep -qE '^ +[0-9.]+s +\* +start ' "$out"; then
            started=1
            break
        fi
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    echo "start_phase_seen=$started"
}
