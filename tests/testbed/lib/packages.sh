# shellcheck shell=bash disable=SC2154
# The machine's own packages (apt) and the hosts' root filesystem (debootstrap). Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

# The Debian mirror this machine already uses, read from its apt sources.
debian_mirror() {
    local uri
    uri=$(grep -hoE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')
    [ -n "$uri" ] || uri=$(grep -hoE '^deb +[^ ]+/debian/? ' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $2}')
    [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list*; set REFIT_TESTBED_MIRROR"
    echo "${REFIT_TESTBED_MIRROR:-$uri}"
}

install_host_packages() {
    local missing=()
    for p in "${host_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "apt: installing ${missing[*]}"
        # The registry must not start as a system service: this bed runs its own on 127.0.0.1.
        local policy=/usr/sbin/policy-rc.d created_policy=
        if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; created_policy=1; fi
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        [ -z "$created_policy" ] || rm -f $policy
    fi
    # Host podman only builds and pushes the test images. crun 1.8 refuses hybrid cgroups, and
    # without CAP_SYS_RESOURCE the default ulimits cannot be raised.
    local nofile nproc
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    mkdir -p "$CACHE"
    cat > "$HOST_CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
}

build_rootfs() {
    if [ -f "$ROOTFS/.refit-recipe" ] && [ "$(cat "$ROOTFS/.refit-recipe")" = "$ROOTFS_RECIPE" ]; then
        log "rootfs: reusing $ROOTFS"
        return
    fi
    log "rootfs: debootstrap trixie into $ROOTFS (about a minute)"
    rm -rf "$ROOTFS" "$ROOTFS.partial"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,podman,python3,iproute2,procps,ca-certificates,curl,openssh-server,uidmap,passt,libpam-systemd,dbus-user-session \
        trixie "$ROOTFS.partial" "$(debian_mirror)" > "$CACHE/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see $CACHE/debootstrap.log"
    local r=$ROOTFS.partial
    rm -f "$r"/var/cache/apt/archives/*.deb
    # Guest podman inside systemd-nspawn here: no pids controller, read-only /proc/sys, no keyctl.
    mkdir -p "$r/etc/containers/containers.conf.d" "$r/etc/containers/systemd" "$r/etc/containers/registries.conf.d"
    cat > "$r/etc/containers/containers.conf.d/50-testbed.conf" <<'EOF'
[containers]
pids_limit = 0
default_sysctls = []
keyring = false
EOF
    registries_conf > "$r/etc/containers/registries.conf.d/50-refit-testbed.conf"
    # Real SSH as users have it. The hosts share this machine's network, so each sshd listens on
    # loopback only, on a port of its own (ssh_setup), and takes only the bed's key.
    cat > "$r/etc/ssh/sshd_config.d/50-testbed.conf" <<'EOF'
ListenAddress 127.0.0.1
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
EOF
    # Every host serves the podman API, the way refit's modules reach podman.
    mkdir -p "$r/etc/systemd/system/sockets.target.wants"
    ln -sf /usr/lib/systemd/system/podman.socket "$r/etc/systemd/system/sockets.target.wants/podman.socket"
    # User `app` runs rootless services (issue 39): linger, so its manager starts at boot with no
    # login; subuid/subgid, so its images' users map; its own podman.socket, as root's is above.
    chroot "$r" useradd --create-home --uid 1001 --user-group --shell /bin/sh app
    printf 'app:200000:65536\n' > "$r/etc/subuid"
    printf 'app:200000:65536\n' > "$r/etc/subgid"
    mkdir -p "$r/var/lib/systemd/linger" "$r/home/app/.config/systemd/user/sockets.target.wants"
    touch "$r/var/lib/systemd/linger/app"
    ln -sf /usr/lib/systemd/user/podman.socket "$r/home/app/.config/systemd/user/sockets.target.wants/podman.socket"
    chroot "$r" chown -R app:app /home/app/.config
    # Quiet, fast boots.
    for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer fstrim.timer e2scrub_all.timer \
        systemd-networkd-wait-online.service; do
        ln -sf /dev/null "$r/etc/systemd/system/$u"
    done
    echo "$ROOTFS_RECIPE" > "$r/.refit-recipe"
    mv "$r" "$ROOTFS"
}

registries_conf() {
    printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$REGISTRY"
}
