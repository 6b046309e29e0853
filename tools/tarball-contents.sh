#!/usr/bin/env bash
# Fails when the collection tarball lacks what a user installs it for: the module binaries with
# their docs, the licence and third-party notices, the changelog, the docsite metadata and the
# execution-environment metadata.
#
#   tools/tarball-contents.sh build/refit-containers-X.Y.Z.tar.gz
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 TARBALL" >&2; exit 64; }
members=$(tar -tzf "$1")
missing=()
for want in LICENSE THIRD-PARTY-NOTICES.txt CHANGELOG.md changelogs/changelog.yaml \
    docs/docsite/links.yml docs/docsite/extra-docs.yml meta/runtime.yml meta/execution-environment.yml \
    plugins/modules/container_unit plugins/modules/container_unit.yml plugins/callback/progress.py \
    plugins/action/flow_state.py plugins/plugin_utils/cached_binary.py; do
    grep -qxF "$want" <<< "$members" || missing+=("$want")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "tarball: $1 lacks ${missing[*]}; build it with make collection" >&2
    exit 1
fi
echo "tarball: $1 has the licence, notices, changelog, docs and EE metadata ($(wc -l <<< "$members") members)"
