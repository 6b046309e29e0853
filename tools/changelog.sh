#!/usr/bin/env bash
# `make changelog`: CHANGELOG.md from changelogs/ with antsibull-changelog. When VERSION is not
# released yet, the fragments in changelogs/fragments become its release (dated today);
# otherwise the release's entries are read again from its fragments (kept, keep_fragments), so a
# fragment fixed later fixes the release it belongs to, and CHANGELOG.md is written again.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# shellcheck source=tools/doctools.sh
. "$REPO/tools/doctools.sh" "$scratch"
version=$(tr -d ' \n' < VERSION)
antsibull-changelog lint
if grep -q "^  $version:" changelogs/changelog.yaml; then
    antsibull-changelog generate --refresh-fragments without-archives
else
    antsibull-changelog release --version "$version"
fi
rm -f changelogs/.plugin-cache.yaml
echo "changelog: CHANGELOG.md for $version"
