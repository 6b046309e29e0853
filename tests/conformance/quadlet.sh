#!/usr/bin/env bash
# quadlet as the test hosts have it (podman 5.4, Debian trixie), run from the testbed's cached
# root file system through that system's own dynamic loader and libc: no container, no chroot,
# nothing written into the cache. The conformance suite calls it as it would call quadlet.
set -euo pipefail
ROOTFS=${REFIT_QUADLET_ROOTFS:-$(ls -d /var/cache/refit-testbed/rootfs-trixie-* 2>/dev/null | sort -V | tail -1)}
bin=$ROOTFS/usr/libexec/podman/quadlet
if [ ! -x "$bin" ]; then
    echo "quadlet.sh: no quadlet at $bin; bring a testbed up once (tests/testbed/testbed.sh up), which builds $ROOTFS" >&2
    exit 127
fi
exec "$ROOTFS/lib64/ld-linux-x86-64.so.2" --library-path "$ROOTFS/usr/lib/x86_64-linux-gnu" "$bin" "$@"
