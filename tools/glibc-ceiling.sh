#!/usr/bin/env bash
# Fails when any binary given needs a GLIBC symbol version above the ceiling: such a binary
# would not start on the oldest hosts refit supports ("version `GLIBC_2.34' not found").
#
#   tools/glibc-ceiling.sh CEILING BINARY...      e.g. tools/glibc-ceiling.sh 2.28 plugins/modules/*
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 CEILING BINARY..." >&2; exit 64; }
ceiling=$1
shift
bad=0
for f in "$@"; do
    [ -f "$f" ] || { echo "glibc: $f does not exist; build it first (make modules)" >&2; exit 1; }
    need=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    need=${need:-none}
    if [ "$need" != none ] && [ "$(printf '%s\n%s\n' "$need" "$ceiling" | sort -V | tail -n 1)" != "$ceiling" ]; then
        echo "glibc: $f needs GLIBC_$need, above the ceiling $ceiling; build it with tools/zigbuild.sh (make modules)" >&2
        bad=1
    else
        echo "glibc: $f needs GLIBC_$need (ceiling $ceiling), $(stat -c %s "$f") bytes"
    fi
done
exit "$bad"
