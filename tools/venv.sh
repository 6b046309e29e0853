#!/usr/bin/env bash
# Makes DIR a venv holding exactly the pinned SPECs, reusing it while the specs are unchanged,
# so the build and docs tools come from PyPI at the versions the repo names.
#
#   tools/venv.sh DIR SPEC...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR SPEC..." >&2; exit 64; }
dir=$1
shift
# Two callers may want the same venv at once (make test's sanity and its lane's core flows):
# the second waits, then finds it made.
mkdir -p "$(dirname "$dir")"
exec 9> "$dir.lock"
flock 9
[ "$(cat "$dir/.refit-spec" 2> /dev/null)" = "$*" ] && exit 0
echo "venv: installing $* into $dir" >&2
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check "$@"
echo "$*" > "$dir/.refit-spec"
