# shellcheck shell=bash disable=SC2154
# Logging, timing, pid files and host podman: what every other part of the testbed uses. Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

log() { printf '[testbed %s] %s\n' "$(date +%T)" "$*" >&2; }

die() { log "error: $*"; exit 1; }

now_ms() { date +%s%3N; }

# Closes every descriptor above stderr in this (sub)shell, so a daemon the bed starts never
# holds a lock its caller took (`flock LOCK testbed.sh up` would otherwise be held for good).
close_inherited_fds() {
    local path fd
    for path in /proc/"$BASHPID"/fd/*; do
        fd=${path##*/}
        [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
    done
    return 0
}

# Runs a named phase and prints how long it took: the figures the README quotes come from here.
phase() {
    local name=$1 t0
    shift
    t0=$(now_ms)
    "$@"
    log "phase $name: $(($(now_ms) - t0)) ms"
}

# Kills the process named in a pid file, waits for it (bounded), and removes the file.
stop_pidfile() {
    local f=$1 p
    [ -f "$f" ] || return 0
    p=$(cat "$f")
    if kill -0 "$p" 2>/dev/null; then
        kill -TERM "$p" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    fi
    rm -f "$f"
}

# Host podman, with the settings above; never passed on to the guests.
host_podman() { CONTAINERS_CONF=$HOST_CONTAINERS_CONF podman "$@"; }
