# shellcheck shell=bash disable=SC2154
# The nspawn hosts: boot, wait, stop, enter, and their sshd port and key. Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

host_dir() { echo "$RUN/hosts/$1"; }

ssh_port_conf() { echo "$(host_dir "$1")/root/etc/ssh/sshd_config.d/60-testbed-port.conf"; }

ssh_port() { awk '{print $2}' "$(ssh_port_conf "$1")"; }

# Gives a new host its sshd port (the next after those of the hosts up) and root the bed's key,
# made once per bed in $RUN/ssh. A reboot keeps both: they live on the host's disk.
ssh_setup() {
    local name=$1 conf used
    conf=$(ssh_port_conf "$name")
    if [ ! -s "$conf" ]; then
        used=$(cat "$RUN"/hosts/*/root/etc/ssh/sshd_config.d/60-testbed-port.conf 2>/dev/null | awk '{print $2}' | sort -n | tail -n 1 || true)
        echo "Port $((${used:-2200} + 1))" > "$conf"
    fi
    if [ ! -f "$RUN/ssh/id_ed25519" ]; then
        install -d -m 0700 "$RUN/ssh"
        ssh-keygen -q -t ed25519 -N '' -C refit-testbed -f "$RUN/ssh/id_ed25519"
    fi
    install -d -m 0700 "$(host_dir "$name")/root/root/.ssh"
    install -m 0600 "$RUN/ssh/id_ed25519.pub" "$(host_dir "$name")/root/root/.ssh/authorized_keys"
}

leader_pid() {
    local nspawn
    nspawn=$(pidfile_pid "$(host_dir "$1")/nspawn.pid") || return 1
    pgrep -P "$nspawn" | head -1
}

boot_host() {
    local name=$1 d cg
    d=$(host_dir "$name")
    mkdir -p "$d"/{upper,work,root,containers,app-containers}
    mountpoint -q "$d/root" || mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$d/upper,workdir=$d/work" "$d/root"
    # User app's podman storage, like root's, cannot sit on the overlay: a dir of its own,
    # owned by app, under a home whose dirs are app's (nspawn would make missing ones root's).
    chown 1001:1001 "$d/app-containers"
    install -d -o 1001 -g 1001 "$d/root/home/app/.local" "$d/root/home/app/.local/share" \
        "$d/root/home/app/.local/share/containers"
    echo "$name" > "$d/root/etc/hostname"
    # A host named np* has no Python (issue 18): removed in its merged view, the files become
    # whiteouts in its upper layer, so `python3` is not found there at all and only refit's own
    # modules and `raw` run. Again at each boot: a no-op once they are gone.
    case $name in np*) rm -rf "$d/root"/usr/bin/python3* "$d/root"/usr/lib/python3* "$d/root"/usr/local/lib/python3* ;; esac
    # A reboot keeps the machine's identity; a new host gets one of its own.
    if [ ! -s "$d/upper/etc/machine-id" ]; then
        od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$d/root/etc/machine-id"
        echo >> "$d/root/etc/machine-id"
    fi
    ssh_setup "$name"
    # The TLS registry's CA, where podman (and refit's lookup) read a registry's CAs; a bed up
    # from before the TLS registry existed has none.
    if [ -s "$RUN/tls-registry/ca.crt" ]; then
        install -D -m 0644 "$RUN/tls-registry/ca.crt" "$d/root/etc/containers/certs.d/$TLS_REGISTRY/ca.crt"
    fi
    # Each guest gets its own cgroup; with --keep-unit they would otherwise all share one.
    cg=$(guest_cgroup "$name")
    for h in "${CGROUP_HIERARCHIES[@]}"; do mkdir -p "$h/$cg"; done
    (
        for h in "${CGROUP_HIERARCHIES[@]}"; do echo $BASHPID > "$h/$cg/cgroup.procs"; done
        close_inherited_fds
        export SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1
        exec systemd-nspawn --boot --register=no --keep-unit --console=read-only --machine="$name" \
            --system-call-filter='bpf keyctl add_key request_key' --capability=CAP_NET_ADMIN \
            --bind="$d/containers:/var/lib/containers" \
            --bind="$d/app-containers:/home/app/.local/share/containers" -D "$d/root" < /dev/null > "$d/console.log" 2>&1
    ) &
    write_pidfile "$d/nspawn.pid" $!
}

wait_host() {
    local name=$1 st='' pid=''
    for _ in $(seq 240); do
        pid=$(leader_pid "$name" || true)
        if [ -n "$pid" ]; then
            st=$(nsenter -t "$pid" -a systemctl is-system-running 2>/dev/null || true)
            case $st in running | degraded) break ;; esac
        fi
        sleep 0.25
    done
    case $st in
    running) ;;
    degraded) log "$name is degraded: $(nsenter -t "$pid" -a systemctl --failed --no-legend | tr '\n' ' ')" ;;
    *) die "$name did not boot within 60 s (state '${st:-none}'); see $(host_dir "$name")/console.log" ;;
    esac
    enter "$name" systemctl start podman.socket
}

# With `keep`, the host's disk stays: its overlay upper dir and containers dir, for a reboot.
stop_host() {
    local name=$1 keep=${2:-} d
    d=$(host_dir "$name")
    # nspawn turns SIGTERM into a clean poweroff of the guest.
    if [ -f "$d/nspawn.pid" ]; then
        local p
        if p=$(pidfile_pid "$d/nspawn.pid"); then
            kill -TERM "$p" 2>/dev/null || true
            for _ in $(seq 120); do pidfile_pid "$d/nspawn.pid" > /dev/null || break; sleep 0.25; done
            if pidfile_pid "$d/nspawn.pid" > /dev/null; then
                pkill -KILL -P "$p" 2>/dev/null || true
                kill -KILL "$p" 2>/dev/null || true
            fi
        fi
        rm -f "$d/nspawn.pid"
    fi
    # A guest whose nspawn was killed (its poweroff timed out) runs on, orphaned, in its cgroup,
    # and its sshd would keep the host's port from the next boot: kill whatever is left there.
    local procs
    for _ in $(seq 20); do
        procs=$(find "${CGROUP_HIERARCHIES[@]/%//$(guest_cgroup "$name")}" -name cgroup.procs -exec cat {} + 2>/dev/null || true)
        [ -n "$procs" ] || break
        echo "$procs" | xargs -r kill -KILL 2>/dev/null || true
        sleep 0.1
    done
    for h in "${CGROUP_HIERARCHIES[@]}"; do
        [ -d "$h/$(guest_cgroup "$name")" ] && find "$h/$(guest_cgroup "$name")" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    # Lazily when busy, and never fatal: a bed half taken down must still finish going down.
    if mountpoint -q "$d/root"; then umount "$d/root" 2> /dev/null || umount -l "$d/root" 2> /dev/null || true; fi
    [ -n "$keep" ] || rm -rf "$d"
}

# Joins the guest's init.scope cgroup before entering it: a process left in the host's root
# cgroup cannot be moved into the guest's cgroups later, which breaks `podman exec`.
enter() {
    local name=$1 pid
    shift
    pid=$(leader_pid "$name") || die "host $name is not running; run: $0 up $name"
    [ -n "$pid" ] || die "host $name is not running; run: $0 up $name"
    (
        echo $BASHPID > "/sys/fs/cgroup/unified$(sed -n 's/^0:://p' "/proc/$pid/cgroup")/cgroup.procs"
        exec nsenter -t "$pid" -a "$@"
    )
}
