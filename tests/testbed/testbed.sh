#!/usr/bin/env bash
# refit's testbed: real systemd, podman with quadlet, a registry and Ansible on a machine whose
# PID 1 is not systemd (Debian 12, root, hybrid cgroups, no CAP_SYS_RESOURCE).
#
#   testbed.sh up [HOST...]        install, build or reuse the rootfs, boot hosts (default: th1),
#                                  start the registry, push the test images, write the inventory;
#                                  a new bed: hosts already up are stopped first
#   testbed.sh add HOST...         boot more hosts into the bed that is up, keeping those running
#                                  (a host named np* has no python3 at all: issue 18)
#   testbed.sh remove HOST...      power HOSTs off and drop them from the bed and its inventory,
#                                  the others running on (hosts listed after them get new ports)
#   testbed.sh down                stop everything this bed started, unmount, remove cgroups
#   testbed.sh reboot HOST         clean poweroff of HOST, then boot it again on the same disk
#                                  (its init gets a new pid: the inventory is rewritten)
#   testbed.sh exec HOST CMD...    run CMD inside HOST (all namespaces, in its init.scope cgroup)
#   testbed.sh publish REPO:TAG VERSION [MODE] [SCHEMA]
#                                  build a new test image and push it under REPO:TAG
#   testbed.sh archive OUT REF...  pull REFs from the registry and `podman save -m` them to OUT
#   testbed.sh registry stop|start take the registry away (offline tests) and bring it back
#                                  (a second one, on $LOGIN_REGISTRY, wants a login: its auth.json
#                                  is $RUN/login-registry/auth.json; `publish` pushes with it)
#   testbed.sh registry pause|resume  freeze the registry (it stops answering) and thaw it
#   testbed.sh pulp-images         build (cached by recipe) and push the Pulp and PostgreSQL images
#                                  (tests/testbed/pulp); `up` does it too when REFIT_PULP=1
#   testbed.sh env                 print the exports that point Ansible at this bed
#   testbed.sh testsvc             build the test service (what `up` puts in the images), print its path
#
# Where things live:
#   REFIT_TESTBED_CACHE (/var/cache/refit-testbed): the rootfs and the venv, kept between beds
#   REFIT_TESTBED_RUN   (/var/tmp/refit-testbed):   hosts, registry, pid files, inventory; per bed
set -euo pipefail

CACHE=${REFIT_TESTBED_CACHE:-/var/cache/refit-testbed}
RUN=${REFIT_TESTBED_RUN:-/var/tmp/refit-testbed}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
REGISTRY=127.0.0.1:5000
# A registry that wants a login (htpasswd, a password new with each bed): private registries.
LOGIN_REGISTRY=127.0.0.1:5001
# A registry over TLS, its certificate from a CA of the bed's own that hosts trust by certs.d only.
TLS_REGISTRY=127.0.0.1:5002
# Bump when the rootfs recipe below changes: each recipe has its own dir, so a bed still running
# on the previous one keeps its lower dir while the new one is built beside it.
ROOTFS_RECIPE=5
ROOTFS=$CACHE/rootfs-trixie-$ROOTFS_RECIPE
VENV=$CACHE/venv
# ansible-core 2.20+ needs Python 3.12; this machine has 3.11.
# cryptography 51 deprecates DSA, and ansible-core 2.19 imports its DSA names at every start (its
# ssh-agent support): each ansible-playbook, and so each refitctl command, would print a
# CryptographyDeprecationWarning that is not refit's (issue 42).
PY_SPECS=('ansible-core>=2.19,<2.20' 'cryptography<51' 'ansible-lint>=25.12,<26' 'molecule==26.10.0')
CGROUP_HIERARCHIES=(/sys/fs/cgroup/unified /sys/fs/cgroup/systemd)
# Each guest's cgroup is named after its bed and itself (refit-testbed.th1): two beds may run at
# once (`make test` runs two lanes, tests/testbed/lane.sh), and one bed's `down` must not sweep
# the other's guests.
BED=$(basename "$RUN")
guest_cgroup() { echo "$BED.$1"; }
HOST_CONTAINERS_CONF=$CACHE/host-containers.conf

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

# The Debian mirror this machine already uses, read from its apt sources.
debian_mirror() {
    local uri
    uri=$(grep -hoE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | awk '{print $2}')
    [ -n "$uri" ] || uri=$(grep -hoE '^deb +[^ ]+/debian/? ' /etc/apt/sources.list 2>/dev/null | head -1 | awk '{print $2}')
    [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list*; set REFIT_TESTBED_MIRROR"
    echo "${REFIT_TESTBED_MIRROR:-$uri}"
}

host_packages=(podman runc conmon busybox-static docker-registry skopeo debootstrap openssh-client openssl
    systemd-container iproute2 curl python3-venv util-linux)

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

make_venv() {
    if [ -x "$VENV/bin/ansible-playbook" ] && [ "$(cat "$VENV/.refit-spec" 2>/dev/null)" = "${PY_SPECS[*]}" ]; then
        log "venv: reusing $VENV"
        return
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_SPECS[@]}"
    echo "${PY_SPECS[*]}" > "$VENV/.refit-spec"
}

start_registry() {
    mkdir -p "$RUN/registry-data"
    cat > "$RUN/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $RUN/registry-data}, delete: {enabled: true}}
http: {addr: $REGISTRY}
EOF
    (close_inherited_fds; exec docker-registry serve "$RUN/registry.yml") > "$RUN/registry.log" 2>&1 &
    echo $! > "$RUN/registry.pid"
    for _ in $(seq 100); do
        curl -fs "http://$REGISTRY/v2/" > /dev/null && return
        sleep 0.1
    done
    die "the registry did not answer on $REGISTRY within 10 s; see $RUN/registry.log"
}

# The pid in registry.pid, while it is still this bed's registry. A pid file can outlive its
# process (it died; a second start that could not bind wrote its own pid), and its pid then
# names whatever process has it now, in any bed: a SIGSTOP sent there can freeze the shell of
# another bed's nsenter'd command, which leaves nsenter stopped for good (it stops itself when
# its child stops, and only it continues the child) and Ansible waiting on it.
registry_pid() {
    local p
    p=$(cat "$RUN/registry.pid" 2> /dev/null) || return 1
    tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null | grep -qF "docker-registry serve $RUN/registry.yml" || return 1
    echo "$p"
}

stop_registry() {
    # A paused registry takes no TERM until it runs again.
    # A pid file whose process is gone (it died, or a reboot) is only removed.
    local p
    if p=$(registry_pid); then kill -CONT "$p" 2> /dev/null || true; fi
    stop_pidfile "$RUN/registry.pid"
}

# The login registry: distribution's htpasswd auth (bcrypt, cost 4 so each request does not
# spend a quarter second hashing), over plain HTTP on loopback, which distribution 2.8 allows.
# Starts empty; `publish 127.0.0.1:5001/...` fills it.
start_login_registry() {
    local d=$RUN/login-registry pw
    mkdir -p "$d/data"
    pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    printf '%s' "$pw" > "$d/password"
    printf 'refit:%s\n' "$(python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$pw")" > "$d/htpasswd"
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$LOGIN_REGISTRY" "$(printf 'refit:%s' "$pw" | base64 -w0)" > "$d/auth.json"
    chmod 600 "$d/password" "$d/htpasswd" "$d/auth.json"
    cat > "$d/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}
http: {addr: $LOGIN_REGISTRY}
auth: {htpasswd: {realm: refit-testbed, path: $d/htpasswd}}
EOF
    (close_inherited_fds; exec docker-registry serve "$d/registry.yml") > "$d/registry.log" 2>&1 &
    echo $! > "$RUN/login-registry.pid"
    for _ in $(seq 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$LOGIN_REGISTRY/v2/")" = 401 ] && return
        sleep 0.1
    done
    die "the login registry did not answer on $LOGIN_REGISTRY within 10 s; see $d/registry.log"
}

stop_login_registry() { stop_pidfile "$RUN/login-registry.pid"; }

# The TLS registry: distribution serving HTTPS with a certificate for 127.0.0.1 from a CA made
# once per bed under $RUN/tls-registry. Hosts trust that CA through
# /etc/containers/certs.d/$TLS_REGISTRY/ca.crt (boot_host) and no registries.conf entry, so a
# pull or a digest lookup that ignores certs.d fails. $RUN/tls-registry/certs.d is host podman's
# --cert-dir parent; `publish` pushes with --tls-verify=false. Starts empty.
start_tls_registry() {
    local d=$RUN/tls-registry ip=${TLS_REGISTRY%:*}
    command -v openssl > /dev/null || die "the TLS registry needs openssl for its certificates; run: apt-get install openssl"
    mkdir -p "$d/data" "$d/certs.d/$TLS_REGISTRY"
    if [ ! -s "$d/server.crt" ]; then
        openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
            -keyout "$d/ca.key" -out "$d/ca.crt" -subj "/CN=refit testbed CA $BED" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2> /dev/null
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout "$d/server.key" -out "$d/server.csr" -subj "/CN=$ip" 2> /dev/null
        printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$ip" > "$d/server.ext"
        openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 -sha256 \
            -extfile "$d/server.ext" -out "$d/server.crt" 2> /dev/null
        rm -f "$d/server.csr" "$d/server.ext" "$d/ca.srl"
        chmod 600 "$d/ca.key" "$d/server.key"
    fi
    cp "$d/ca.crt" "$d/certs.d/$TLS_REGISTRY/ca.crt"
    cat > "$d/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}
http: {addr: $TLS_REGISTRY, tls: {certificate: $d/server.crt, key: $d/server.key}}
EOF
    (close_inherited_fds; exec docker-registry serve "$d/registry.yml") > "$d/registry.log" 2>&1 &
    echo $! > "$RUN/tls-registry.pid"
    for _ in $(seq 100); do
        curl -fs --cacert "$d/ca.crt" "https://$TLS_REGISTRY/v2/" > /dev/null && return
        sleep 0.1
    done
    die "the TLS registry did not answer on https://$TLS_REGISTRY within 10 s; see $d/registry.log"
}

stop_tls_registry() { stop_pidfile "$RUN/tls-registry.pid"; }

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

# The layers every test image shares (busybox and the scripts), built once per content of
# tests/testbed/image and /bin/busybox and kept in host podman's storage across beds; prints its
# reference. Its RUN step is what makes a build slow (a container run), so only this has it.
base_image() {
    local dir=$REPO/tests/testbed/image key ref ctx svc
    svc=$(testsvc_binary)
    key=$(cat "$dir/Containerfile.base" "$dir/migrate.sh" "$svc" /bin/busybox | sha256sum | cut -c1-16)
    ref=localhost/refit-testbed-base:$key
    if ! host_podman image exists "$ref"; then
        ctx=$RUN/image-build
        rm -rf "$ctx"
        cp -r "$dir" "$ctx"
        cp /bin/busybox "$ctx/busybox"
        cp "$svc" "$ctx/testsvc"
        host_podman build -q --network none --format docker -f "$ctx/Containerfile.base" -t "$ref" "$ctx" > /dev/null
        rm -rf "$ctx"
    fi
    echo "$ref"
}

# The test service (tests/testbed/testsvc), static so it runs FROM scratch; prints its path. Its
# own target dir: the static flags would otherwise force rebuilds in the workspace's. The crate
# has no dependencies, but cargo resolves the whole workspace: tools/cargo-fetch.sh fetches its
# crates when the cargo home lacks them (a fresh machine), then the build itself is offline.
testsvc_binary() {
    local target=$CACHE/testsvc-target triple=x86_64-unknown-linux-gnu
    "$REPO/tools/cargo-fetch.sh" >&2
    (cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release --locked --offline \
        -p refit-testsvc --target "$triple" --target-dir "$target") >&2
    echo "$target/$triple/release/testsvc"
}

# Builds one test image with host podman and pushes it under every tag given. Only metadata is
# added to the base, so each build is a new image (a new digest) in about a second.
build_image() {
    local version=$1 mode=$2 schema=$3 base
    shift 3
    base=$(base_image)
    # --no-cache: buildah 1.28 reuses its cache across different --build-arg values.
    # Built under a name of this build's own and pushed to each tag: host storage is shared by
    # every bed, and two beds publishing the same REPO:TAG at once must not retag each other's.
    local own id
    own=localhost/refit-testbed-publish:$BED-$BASHPID-$(now_ms)
    id=$(host_podman build -q --no-cache --pull=never --network none --format docker \
        --build-arg BASE="$base" --build-arg VERSION="$version" --build-arg MODE="$mode" --build-arg SCHEMA="$schema" \
        -t "$own" -f "$REPO/tests/testbed/image/Containerfile" "$REPO/tests/testbed/image")
    local auth=()
    [ -f "$RUN/login-registry/auth.json" ] && auth=(--authfile "$RUN/login-registry/auth.json")
    for t in "$@"; do host_podman push -q --tls-verify=false "${auth[@]}" "$id" "docker://$t"; done
    # The registry holds it now. Host storage keeps only the base: every host podman call slows
    # with the images a suite publishes (a metadata-only build took 6 s beside 550 of them).
    host_podman rmi "$own" > /dev/null
}

# The catalogue every test can rely on. Streams are 1.0 .. 1.3; the stream tag (svc:1.0) moves
# to the newest z-release, and a z-release (svc:1.0.1) exists to be published under it.
push_images() {
    local r=$REGISTRY
    build_image 1.0.0 serve 1 $r/svc:1.0.0 $r/svc:1.0
    build_image 1.0.1 serve 1 $r/svc:1.0.1
    build_image 1.1.0 serve 2 $r/svc:1.1.0 $r/svc:1.1
    build_image 1.2.0 serve 3 $r/svc:1.2.0 $r/svc:1.2
    build_image 1.3.0 serve 4 $r/svc:1.3.0 $r/svc:1.3
    build_image 0.0.0 crash 1 $r/crash:latest
    build_image 0.0.0 hang 1 $r/hang:latest
    build_image 0.0.0 stubborn 1 $r/stubborn:latest
}

pulp_images() { ROOTFS=$ROOTFS CACHE=$CACHE RUN=$RUN REGISTRY=$REGISTRY CONTAINERS_CONF=$HOST_CONTAINERS_CONF "$REPO/tests/testbed/pulp/build.sh"; }

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
leader_pid() { pgrep -P "$(cat "$(host_dir "$1")/nspawn.pid")" 2>/dev/null | head -1; }

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
    echo $! > "$d/nspawn.pid"
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
        p=$(cat "$d/nspawn.pid")
        if kill -0 "$p" 2>/dev/null; then
            kill -TERM "$p" 2>/dev/null || true
            for _ in $(seq 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
            pkill -KILL -P "$p" 2>/dev/null || true
            kill -KILL "$p" 2>/dev/null || true
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

write_ansible_config() {
    # The hosts share one network (Network=host): each needs ports of its own. The first two
    # keep the bases the examples and the benches were written for (tests at 18000/18100, the
    # deployment at 18200/18300); every later host gets a block of 200 above 20000.
    local i=0 port refit_port
    {
        echo "[testhosts]"
        for name in "$@"; do
            if [ $i -lt 2 ]; then
                port=$((18000 + 100 * i)) refit_port=$((18200 + 100 * i))
            else
                port=$((20000 + 200 * (i - 2))) refit_port=$((20100 + 200 * (i - 2)))
            fi
            echo "$name ansible_connection=refit_testhost refit_testhost_pid=$(leader_pid "$name") testbed_port_base=$port refit_port_base=$refit_port ansible_host=127.0.0.1 ansible_port=$(ssh_port "$name")"
            i=$((i + 1))
        done
        echo
        echo "[testhosts:vars]"
        # On an np* host this names nothing: a Python module fails there, as it should.
        echo "ansible_python_interpreter=/usr/bin/python3"
        echo "testbed_registry=$REGISTRY"
        echo "testbed_login_registry=$LOGIN_REGISTRY"
        echo "testbed_login_auth_file=$RUN/login-registry/auth.json"
        echo "testbed_tls_registry=$TLS_REGISTRY"
        # The bed's own directory on the controller: scenario files there never meet another
        # lane's (tests/testbed/lane.sh), as files under a fixed /var/tmp name would.
        echo "testbed_run=$RUN"
        echo "ansible_user=root"
        echo "ansible_ssh_private_key_file=$RUN/ssh/id_ed25519"
        echo "ansible_ssh_common_args='-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no'"
    } > "$RUN/inventory.ini"
    # The same hosts over real SSH: ANSIBLE_INVENTORY=$RUN/inventory-ssh.ini.
    sed 's/ ansible_connection=refit_testhost / ansible_connection=ssh /' "$RUN/inventory.ini" > "$RUN/inventory-ssh.ini"
    mkdir -p "$RUN/collections"
    cat > "$RUN/ansible.cfg" <<EOF
[defaults]
inventory = $RUN/inventory.ini
connection_plugins = $REPO/tests/ansible/connection_plugins
collections_path = $RUN/collections
host_key_checking = False
retry_files_enabled = False
interpreter_python = /usr/bin/python3
forks = 10
EOF
}

# Anything a killed bed left: processes named in pid files, overlay mounts, cgroup dirs.
clean_stale() {
    [ -d "$RUN" ] || return 0
    if [ -d "$RUN/hosts" ]; then
        for d in "$RUN"/hosts/*/; do
            [ -d "$d" ] && stop_host "$(basename "$d")"
        done
    fi
    stop_registry
    stop_login_registry
    stop_tls_registry
    while read -r mnt; do umount -l "$mnt" || true; done < <(awk -v r="$RUN/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r)
    for h in "${CGROUP_HIERARCHIES[@]}"; do
        for c in "$h/$BED".*; do
            [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
    done
    rm -rf "$RUN"
}

cmd_up() {
    local hosts=("$@")
    [ ${#hosts[@]} -gt 0 ] || hosts=(th1)
    [ "$(id -u)" = 0 ] || die "the testbed needs root (systemd-nspawn, mounts, cgroups)"
    local t0
    t0=$(now_ms)
    phase clean-stale clean_stale
    mkdir -p "$RUN/hosts" "$CACHE"
    phase host-packages install_host_packages
    phase rootfs build_rootfs
    phase venv make_venv
    phase registry start_registry
    phase login-registry start_login_registry
    phase tls-registry start_tls_registry
    for h in "${hosts[@]}"; do phase "boot-$h" boot_host "$h"; done
    phase images push_images
    [ -z "${REFIT_PULP:-}" ] || phase pulp-images pulp_images
    for h in "${hosts[@]}"; do phase "wait-$h" wait_host "$h"; done
    write_ansible_config "${hosts[@]}"
    printf '%s\n' "${hosts[@]}" > "$RUN/hosts.list"
    log "up in $(($(now_ms) - t0)) ms: hosts ${hosts[*]}, registry $REGISTRY; for Ansible: eval \"\$($0 env)\""
}

# Boots HOSTs beside the hosts of the bed that is up, and rewrites the inventory with all of
# them (the new ones last, so the others keep their ports); `up` would stop the others.
cmd_add() {
    [ -f "$RUN/hosts.list" ] || die "no bed is up; run: $0 up $*"
    local hosts new=() h t0
    mapfile -t hosts < "$RUN/hosts.list"
    t0=$(now_ms)
    for h in "$@"; do
        if [[ " ${hosts[*]} ${new[*]} " == *" $h "* ]]; then
            log "$h is in the bed already"
        else
            new+=("$h")
        fi
    done
    for h in "${new[@]}"; do phase "boot-$h" boot_host "$h"; done
    for h in "${new[@]}"; do phase "wait-$h" wait_host "$h"; done
    hosts+=("${new[@]}")
    write_ansible_config "${hosts[@]}"
    printf '%s\n' "${hosts[@]}" > "$RUN/hosts.list"
    log "added ${new[*]:-nothing} in $(($(now_ms) - t0)) ms: hosts ${hosts[*]}"
}

# Stops HOSTs of the bed that is up and drops them from it, disk and all; the rest run on.
cmd_remove() {
    local t0 keep=() h
    t0=$(now_ms)
    [ -f "$RUN/hosts.list" ] || die "no bed is up"
    # On fd 3: stop_host's commands keep stdin.
    while read -r -u 3 h; do
        if [[ " $* " == *" $h "* ]]; then phase "stop-$h" stop_host "$h"; else keep+=("$h"); fi
    done 3< "$RUN/hosts.list"
    write_ansible_config "${keep[@]}"
    if [ ${#keep[@]} -gt 0 ]; then printf '%s\n' "${keep[@]}"; fi > "$RUN/hosts.list"
    log "removed $* in $(($(now_ms) - t0)) ms: hosts ${keep[*]:-none}"
}

cmd_down() {
    local t0
    t0=$(now_ms)
    clean_stale
    log "down in $(($(now_ms) - t0)) ms"
}

cmd_reboot() {
    local name=$1 t0 hosts
    [ -f "$(host_dir "$name")/nspawn.pid" ] || die "host $name is not up; run: $0 up $name"
    t0=$(now_ms)
    phase "poweroff-$name" stop_host "$name" keep
    phase "boot-$name" boot_host "$name"
    phase "wait-$name" wait_host "$name"
    mapfile -t hosts < "$RUN/hosts.list"
    write_ansible_config "${hosts[@]}"
    log "rebooted $name in $(($(now_ms) - t0)) ms; its init is pid $(leader_pid "$name") now (inventory rewritten)"
}

cmd_env() {
    echo "export ANSIBLE_CONFIG=$RUN/ansible.cfg"
    echo "export PATH=$VENV/bin:\$PATH"
    echo "export REFIT_TESTBED_RUN=$RUN"
}

main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
    up) cmd_up "$@" ;;
    add)
        [ $# -ge 1 ] || die "usage: $0 add HOST..."
        cmd_add "$@"
        ;;
    remove)
        [ $# -ge 1 ] || die "usage: $0 remove HOST..."
        cmd_remove "$@"
        ;;
    down) cmd_down ;;
    reboot)
        [ $# -eq 1 ] || die "usage: $0 reboot HOST"
        cmd_reboot "$1"
        ;;
    exec)
        [ $# -ge 2 ] || die "usage: $0 exec HOST CMD..."
        enter "$@"
        ;;
    publish)
        [ $# -ge 2 ] || die "usage: $0 publish REPO:TAG VERSION [MODE] [SCHEMA]"
        build_image "$2" "${3:-serve}" "${4:-1}" "$1"
        ;;
    archive)
        [ $# -ge 2 ] || die "usage: $0 archive OUT REF..."
        out=$1
        shift
        # In a scratch storage: REF names an image of this bed's registry, and the shared host
        # storage may hold the same name from another bed's.
        scratch=$(mktemp -d "$RUN/archive.XXXXXX")
        for r in "$@"; do host_podman --root "$scratch/root" --runroot "$scratch/run" pull -q --tls-verify=false "$r" > /dev/null; done
        rm -f "$out"
        # -m: without it, several images land in one archive as one image with many tags.
        host_podman --root "$scratch/root" --runroot "$scratch/run" save -q -m -o "$out" "$@"
        rm -rf "$scratch"
        ;;
    registry)
        case ${1:-} in
        stop) stop_registry ;;
        start) start_registry ;;
        # The login registry alone, again (a bed brought up before it existed has none).
        login-start) stop_login_registry && start_login_registry ;;
        # A registry that stops answering, connections held open and unserved, and its return.
        pause | resume)
            pid=$(registry_pid) || die "$RUN/registry.pid names no registry of this bed; run '$0 registry stop' and '$0 registry start'"
            if [ "$1" = pause ]; then kill -STOP "$pid"; else kill -CONT "$pid"; fi
            ;;
        *) die "usage: $0 registry stop|start|pause|resume|login-start" ;;
        esac
        ;;
    env) cmd_env ;;
    pulp-images) pulp_images ;;
    testsvc) testsvc_binary ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        [ -z "$cmd" ] || [ "$cmd" = help ] || exit 2
        ;;
    esac
}

main "$@"
