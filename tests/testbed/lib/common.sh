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

# A pid file holds the pid and the process's start time (field 22 of /proc/PID/stat). A pid file
# can outlive its process (it died, a power-off trial, a killed run), and the kernel gives its pid
# to the next process, in any bed: a guest's nspawn booting in another lane was once powered off
# by such a file. A pid is signalled only while its start time is the recorded one.
proc_start_time() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # The command name, in parentheses, may hold spaces: count the fields after it.
    awk '{print $20}' <<< "${stat##*) }"
}

write_pidfile() { echo "$2 $(proc_start_time "$2" || true)" > "$1"; }

# The pid in pid file $1 while its process lives; fails when the file is missing or its process
# has ended (whatever holds that pid now).
pidfile_pid() {
    local p start
    read -r p start < "$1" 2>/dev/null || return 1
    [ -n "$start" ] && [ "$(proc_start_time "$p" || true)" = "$start" ] || return 1
    echo "$p"
}

# Kills the process named in a pid file, waits for it (bounded), and removes the file.
stop_pidfile() {
    local f=$1 p
    [ -f "$f" ] || return 0
    if p=$(pidfile_pid "$f"); then
        kill -TERM "$p" 2>/dev/null || true
        for _ in $(seq 50); do pidfile_pid "$f" > /dev/null || break; sleep 0.1; done
        if pidfile_pid "$f" > /dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
    fi
    rm -f "$f"
}

# Host podman, with the settings above; never passed on to the guests.
host_podman() { CONTAINERS_CONF=$HOST_CONTAINERS_CONF podman "$@"; }
