# shellcheck shell=bash
# What kill_in_phase.sh and power_off_in_phase.sh share, sourced by both: the refit run started
# in the background, and the watch on the host that finds the module of a phase and strikes it.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bed=$repo/tests/testbed/testbed.sh
# A module process on the host, as Ansible's own path runs it (refit_kept_modules=false): its
# args file, argv[1], tells its phase. A module's detached worker has the same command line.
modules='ansible-tmp-[^ ]*/(AnsiballZ_)?(container_unit|run_migrations|stop_services|flow_state|data_step) '

# The host's side, put before each watch: `module NAME PATTERN` prints the pid of the first
# module process of NAME whose args file holds PATTERN.
module_lookup=$(cat <<'SH'
module() {
    for p in $(pgrep -f "$modules"); do
        cmd=$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null) || continue
        args=${cmd#* }; args=${args%% *}
        case $cmd in *"$1"*) grep -qs -- "$2" "$args" && { echo "$p"; return 0; } ;; esac
    done
    return 1
}
SH
)

# start_run PLAYBOOK HOST LOG [ANSIBLE-PLAYBOOK ARGS...]: the run, in a process group of its
# own, in the background; sets run_pid and run_t0 (ms).
start_run() {
    local playbook=$1 host=$2 log=$3
    shift 3
    run_t0=$(date +%s%3N)
    # refit_kept_modules=false: each module runs from its args file, which tells its phase here.
    setsid ansible-playbook "$playbook" -e "refit_hosts=$host" -e refit_kept_modules=false "$@" > "$log" 2>&1 &
    run_pid=$!
}

# watch_host HOST WHAT LOG WATCH [ARGS...]: runs the sh script WATCH on HOST, with `module` and
# $modules defined and ARGS as its $1...; when it fails (WHAT was never seen), the run is
# killed, its log's tail shown, and the caller exits 1.
watch_host() {
    local host=$1 what=$2 log=$3 script=$4
    shift 4
    if ! "$bed" exec "$host" sh -c "modules='$modules'
$module_lookup
$script" watch "$@"; then
        kill -KILL -- "-$run_pid" 2> /dev/null || true
        echo "$what was never seen in $(($(date +%s%3N) - run_t0)) ms; the run's log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
}
