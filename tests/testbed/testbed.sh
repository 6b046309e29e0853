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
# Bump when the rootfs recipe (build_rootfs, lib/packages.sh) changes: each recipe has its own
# dir, so a bed still running on the previous one keeps its lower dir while the new one is built
# beside it.
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

host_packages=(podman runc conmon busybox-static docker-registry skopeo debootstrap openssh-client openssl
    systemd-container iproute2 curl python3-venv util-linux)

# The testbed by concern: the functions live in tests/testbed/lib, and read the settings above.
# shellcheck source=tests/testbed/lib/common.sh
. "$REPO/tests/testbed/lib/common.sh"
# shellcheck source=tests/testbed/lib/packages.sh
. "$REPO/tests/testbed/lib/packages.sh"
# shellcheck source=tests/testbed/lib/venv.sh
. "$REPO/tests/testbed/lib/venv.sh"
# shellcheck source=tests/testbed/lib/registries.sh
. "$REPO/tests/testbed/lib/registries.sh"
# shellcheck source=tests/testbed/lib/images.sh
. "$REPO/tests/testbed/lib/images.sh"
# shellcheck source=tests/testbed/lib/hosts.sh
. "$REPO/tests/testbed/lib/hosts.sh"
# shellcheck source=tests/testbed/lib/inventory.sh
. "$REPO/tests/testbed/lib/inventory.sh"
# shellcheck source=tests/testbed/lib/commands.sh
. "$REPO/tests/testbed/lib/commands.sh"

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
