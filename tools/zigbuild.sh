#!/usr/bin/env bash
# Release build of the given cargo packages for the hosts refit supports: x86_64 Linux with
# glibc 2.28 or newer (EL8, Debian 10+, Ubuntu 20.04+). cargo-zigbuild links against glibc
# 2.28's symbol versions through zig, so the binaries need nothing newer, whatever glibc this
# machine has. Both come from PyPI, pinned, in a venv of their own kept in the testbed's cache.
#
#   tools/zigbuild.sh GLIBC -p refit-modules [-p refitctl]    binaries land in target/$TRIPLE/release/
#
# GLIBC is the ceiling, e.g. 2.28; the Makefile's GLIBC_CEILING is the one place it is set.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${REFIT_TESTBED_CACHE:-/var/cache/refit-testbed}
VENV=$CACHE/zigbuild-venv
SPECS=(cargo-zigbuild==0.24.1 ziglang==0.17.1)
# The triple cargo names the output directory after; zigbuild reads the glibc suffix off it.
TRIPLE=x86_64-unknown-linux-gnu
[ $# -ge 1 ] || { echo "usage: $0 GLIBC CARGO-ARGS..." >&2; exit 64; }
GLIBC=$1
shift

"$REPO/tools/venv.sh" "$VENV" "${SPECS[@]}"
rustup target list --installed 2> /dev/null | grep -qx "$TRIPLE" || rustup target add "$TRIPLE"
cd "$REPO"
PATH=$VENV/bin:$PATH cargo zigbuild --release --locked --target "$TRIPLE.$GLIBC" "$@"
