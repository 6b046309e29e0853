#!/usr/bin/env bash
# Runs CMD in a second, separate testbed: its own network namespace (so its registry, hosts and
# services use the same 127.0.0.1 ports as the first bed's, unchanged, and neither sees the
# other's) and its own REFIT_TESTBED_RUN. `make test` runs part of its scenarios in one, beside
# the first bed, so the suite takes the time of the longer lane rather than of both.
#
#   lane.sh NAME CMD...    CMD in lane NAME (its namespace made, loopback up, when new)
#   lane.sh NAME --delete  the namespace removed (take the lane's bed down first)
#
# In the lane, tests/testbed/testbed.sh, tests/integration/run.sh and molecule work as in the
# first bed: REFIT_TESTBED_RUN is /var/tmp/refit-testbed-NAME. The rootfs, venvs and the host's
# image storage are shared (the first bed builds them; testbed.sh publishes without local
# names, so the beds never retag each other's images).
set -euo pipefail
[ $# -ge 2 ] || {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
name=$1
shift
case $name in
*[!a-z0-9]* | '') echo "lane.sh: lane name '$name' must be lower-case letters and digits" >&2 && exit 2 ;;
esac
netns=refit-testbed-$name
if [ "$1" = --delete ]; then
    ! ip netns list | grep -qw "$netns" || ip netns delete "$netns"
    exit 0
fi
if ! ip netns list | grep -qw "$netns"; then
    ip netns add "$netns"
    ip -n "$netns" link set lo up
fi
# nsenter, not `ip netns exec`: that remounts /sys for the namespace, which hides the cgroup
# hierarchies the testbed's hosts live in.
exec nsenter --net="/run/netns/$netns" env REFIT_TESTBED_RUN="/var/tmp/refit-testbed-$name" "$@"
