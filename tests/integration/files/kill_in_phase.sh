#!/usr/bin/env bash
# Starts a refit update against HOST in the background and kill -9s it in PHASE: the controller
# (ansible-playbook and its process group) or the module running on the host. Then waits until
# the controller has ended and no refit module runs on the host, and for FAULT_QUIET_SECONDS
# (default 3, more than the lease grace the caller gives), so the caller's rerun meets an
# interrupted run, not a live one. Prints one line: what it killed, and when.
#
#   kill_in_phase.sh HOST PHASE TARGET LOG [ANSIBLE-PLAYBOOK ARGS...]
#   PHASE:  fetch (the preflight call, which fetches) | migrate | start | recover
#   TARGET: controller | module
set -euo pipefail
host=$1 phase=$2 target=$3 log=$4
shift 4
# shellcheck source=tests/integration/files/in_phase.sh
. "$(dirname "$0")/in_phase.sh"

# Runs on the host, so a phase is caught and struck within milliseconds: a module process of
# the phase (told by the module and the state in its args file) or, for migrate, the
# migration's one-off container running. Every 10 ms, since a start phase with nothing left to
# do (its service started again after its migration) runs for some 50 ms; at most 6000 looks,
# about 90 s.
watch=$(cat <<'SH'
phase=$1 target=$2
i=0
while [ $i -lt 6000 ]; do
    p=
    case $phase in
    fetch) p=$(module flow_state '"action": "begin"') || p= ;;
    start) p=$(module container_unit '"state": "started"') || p= ;;
    recover) p=$(module container_unit '"state": "rolled_back"') || p= ;;
    migrate) podman ps -q --filter label=io.refit.migration | grep -q . && p=$(module run_migrations '"') || p= ;;
    esac
    if [ -n "$p" ]; then
        [ "$target" = module ] && kill -KILL "$p"
        exit 0
    fi
    i=$((i + 1))
    sleep 0.01
done
exit 1
SH
)

start_run refit.containers.update "$host" "$log" "$@"
pid=$run_pid
watch_host "$host" "phase $phase" "$log" "$watch" "$phase" "$target"
at=$(($(date +%s%3N) - run_t0))
[ "$target" = controller ] && kill -KILL -- "-$pid"
# The controller ends (killed, or through its own recovery after a killed module), reaped by
# `wait` (`kill -0` is true of a zombie, and cost each trial a minute), at most 120 s.
(sleep 120 && kill -KILL -- "-$pid") > /dev/null 2>&1 &
timer=$!
wait "$pid" 2> /dev/null || true
kill "$timer" 2> /dev/null || true
# Every module it left on the host finishes, seen as refit's state locks free, root's and each
# user's (a module outlives a killed controller, as over SSH), at most 300 s: a rollback the
# killed controller had started runs on to its end, and was seen to take over 120 s once (its
# convergence wait). A user scope's run holds its own lock, in the user's state dir.
locks='/var/lib/refit/lock /home/*/.local/state/refit/lock'
if ! "$bed" exec "$host" sh -c "for l in $locks; do [ ! -e \"\$l\" ] || flock -w 300 \"\$l\" true || exit 1; done"; then
    echo "a refit lock on $host was still held 300 s after the $target was killed in $phase; the holders and the processes there:" >&2
    "$bed" exec "$host" sh -c "for l in $locks; do [ ! -e \"\$l\" ] || { echo \"\$l:\"; cat \"\$l\"; echo; }; done; ps -eo pid,pgid,etimes,args" >&2 || true
    exit 1
fi
sleep "${FAULT_QUIET_SECONDS:-3}"
echo "killed the $target in $phase after $at ms"
