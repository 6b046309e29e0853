#!/usr/bin/env bash
# Makes the containers.podman collection the `ansible` package on PyPI ships (the pin the bench's
# baseline uses, bench/run.sh's BENCH_SPEC) available without installing that package: the
# wheel is downloaded once and only that collection is unpacked, into a dir keyed by the pin.
# Prints the collections path to put in ANSIBLE_COLLECTIONS_PATH.
#
#   tools/containers_podman.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# root's testbed cache, or the caller's own (make check runs without root).
if [ "$(id -u)" = 0 ]; then
    cache=${REFIT_TESTBED_CACHE:-/var/cache/refit-testbed}
else
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/refit
fi
spec=$(sed -n "s/^BENCH_SPEC='\(.*\)'$/\1/p" "$repo/bench/run.sh")
[ -n "$spec" ] || { echo "containers_podman: no BENCH_SPEC in bench/run.sh" >&2; exit 1; }
dir=$cache/containers-podman-${spec//[^A-Za-z0-9.]/_}
# A python with pip: the caller's (PYTHON), the testbed's venv, or python3 (Debian's may have
# none).
python=${PYTHON:-$cache/venv/bin/python}
[ -x "$python" ] || python=python3
mkdir -p "$cache"
exec 9> "$dir.lock"
flock 9
if [ ! -f "$dir/ansible_collections/containers/podman/MANIFEST.json" ]; then
    echo "containers_podman: unpacking containers.podman from $spec into $dir" >&2
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$python" -m pip download -q --disable-pip-version-check --no-deps -d "$work" "$spec" >&2
    "$python" - "$work"/*.whl "$work/out" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "ansible_collections/containers/podman/"
with zipfile.ZipFile(wheel) as z:
    z.extractall(out, [n for n in z.namelist() if n.startswith(prefix)])
PY
    rm -rf "$dir"
    mv "$work/out" "$dir"
fi
echo "$dir"
