#!/usr/bin/env bash
# Starts a refit upgrade against HOST in the background and powers HOST off (testbed.sh reboot)
# at MOMENT, after freezing (SIGSTOP) the module at work there and killing the controller, so
# nothing of the run happens after that moment but the power-off, as when the power goes.
# Returns once HOST has booted again. Prints one line: the moment, and when it was struck.
#
#   power_off_in_phase.sh HOST MOMENT LOG [ANSIBLE-PLAYBOOK ARGS...]
#   POWER_OFF_FLOW=update runs an update instead (a z-stream under the same tags).
#   MOMENT: fetched   the preflight ended (the run's first run_migrations is seen, frozen at once)
#           migrating api's migration container runs
#           exit_lost as migrating, and api's migration container loses its conmon first, so
#                     podman never records its exit (as when the power goes before conmon can)
#           migrated  api's migration ran and its new text was installed; the reload that follows
#                     is slowed (files/slow_reload.sh, installed by the caller), so api is not
#                     started yet
#           starting  the start phase installed app's new text (db converged before it)
#           building  a data step's build container runs (the new major's cluster being made)
set -euo pipefail
host=$1 moment=$2 log=$3
shift 3
# shellcheck source=tests/integration/files/in_phase.sh
. "$(dirname "$0")/in_phase.sh"

# Runs on the host: finds the moment, freezes the module of that phase, and exits 0. Every
# 10 ms, at most 6000 looks (about 90 s).
watch=$(cat <<'SH'
moment=$1
mkdir -p /run/refit-test
: > /run/refit-test/t0
migrating() { podman ps -q --filter label=io.refit.migration=api.service | grep -q .; }
i=0
while [ $i -lt 6000 ]; do
    p=
    case $moment in
    fetched) p=$(module run_migrations '"migrations"') || p= ;;
    migrating) migrating && p=$(module run_migrations '"migrations"') || p= ;;
    exit_lost)
        if migrating && p=$(module run_migrations '"migrations"'); then
            c=$(podman ps -q --no-trunc --filter label=io.refit.migration=api.service | head -n 1)
            after=$(podman inspect --format '{{.State.ConmonPid}}' "$c")
        else
            p=
        fi ;;
    migrated)
        if [ -e /run/refit-test/in-reload ]; then
            p=$(module run_migrations '"migrations"') || p=
        elif migrating && [ ! -e /run/refit-test/armed ]; then
            : > /run/refit-test/armed
            : > /run/refit-test/slow-reload
        fi ;;
    building)
        podman ps --no-trunc --filter label=io.refit.migration=data-step:pulp-db.service --format '{{.Command}}' |
            grep -q 'refit-data-step build' && p=$(module data_step '"steps"') || p= ;;
    starting)
        [ /etc/containers/systemd/app.container -nt /run/refit-test/t0 ] &&
            p=$(module container_unit '"state": "started"') || p= ;;
    esac
    if [ -n "$p" ]; then
        # conmon first: the fault. The module may have ended by now (its wait failed).
        [ -z "${after:-}" ] || kill -KILL "$after"
        kill -KILL "$p" 2> /dev/null || true
        exit 0
    fi
    i=$((i + 1))
    sleep 0.01
done
exit 1
SH
)

start_run "refit.containers.${POWER_OFF_FLOW:-upgrade}" "$host" "$log" "$@"
pid=$run_pid
watch_host "$host" "moment $moment" "$log" "$watch" "$moment"
at=$(($(date +%s%3N) - run_t0))
kill -KILL -- "-$pid" 2> /dev/null || true
wait "$pid" 2> /dev/null || true
rebooted=$("$bed" reboot "$host" 2>&1)
took=$(echo "$rebooted" | sed -n 's/.*rebooted .* in \([0-9]*\) ms.*/\1/p')
# exit_lost: the fault is there, or the trial would prove nothing. podman lists api's migration
# container as exited, code 0, with no exit recorded; or, when refit's wait asked for its exit
# before the power went (the module outlives its killed controller), with -1 recorded: podman's
# mark of an exit it never learnt.
if [ "$moment" = exit_lost ]; then
    left=$("$bed" exec "$host" podman ps -a --filter label=io.refit.migration=api.service \
        --format '{{.State}} recorded={{.Exited}} code={{.ExitCode}}')
    case $left in
    "exited recorded=false code=0" | "exited recorded=true code=-1") ;;
    *)
        echo "after the boot api's migration container is listed as '$left', not as exited with no exit code" >&2
        exit 1 ;;
    esac
fi
echo "powered $host off at $moment, $at ms into the ${POWER_OFF_FLOW:-upgrade}; poweroff and boot took ${took:-?} ms"
