#!/usr/bin/env bash
# Corrupts the blobs of an image in the testbed's registry, in place (same size, so only a
# digest check tells), or puts them back: a registry serving a damaged image, and its repair.
# Usage: registry_blobs.sh corrupt|repair REF, with REFIT_TESTBED_RUN naming the bed.
set -euo pipefail
action=$1 ref=$2
blobs=$REFIT_TESTBED_RUN/registry-data/docker/registry/v2/blobs/sha256
kept=$REFIT_TESTBED_RUN/blobs-kept
case $action in
corrupt)
    rm -rf "$kept" && mkdir -p "$kept"
    manifest=$(skopeo inspect --raw --tls-verify=false "docker://$ref")
    digests=$(python3 -c 'import json, sys; m = json.load(sys.stdin); print(" ".join([m["config"]["digest"]] + [l["digest"] for l in m["layers"]]))' <<< "$manifest")
    for d in $digests; do
        h=${d#sha256:}
        f=$blobs/${h:0:2}/$h/data
        cp -p "$f" "$kept/$h"
        size=$(stat -c %s "$f")
        printf 'refit-corrupt' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
        echo "corrupted $d ($size bytes)"
    done
    ;;
repair)
    for k in "$kept"/*; do
        h=$(basename "$k")
        cp -p "$k" "$blobs/${h:0:2}/$h/data"
        echo "repaired sha256:$h"
    done
    rm -rf "$kept"
    ;;
*) echo "usage: $0 corrupt|repair REF" >&2 && exit 2 ;;
esac
