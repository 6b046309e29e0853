#!/usr/bin/env bash
# `make docs`: the collection's HTML docsite, from the sidecar docs of the modules, the roles'
# argument specs, the callback's DOCUMENTATION and docs/docsite, with antsibull-docs and Sphinx
# (PyPI, pinned, in a venv of their own). Any warning fails the build.
#
#   tools/docs.sh OUT        the site lands in OUT/html (index.html)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 64; }
OUT=$(mkdir -p "$1" && cd "$1" && pwd)

# The collections path lives outside the repo: a link to the checkout inside it would loop.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# shellcheck source=tools/doctools.sh
. "$REPO/tools/doctools.sh" "$scratch"
# The sidecar docs are read beside their module, so the binaries must be there.
for doc in "$REPO"/plugins/modules/*.yml; do
    [ -x "${doc%.yml}" ] || { echo "docs: ${doc%.yml} is not built; run: make modules" >&2; exit 1; }
done

log=$OUT/antsibull-docs.log
antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck "$REPO"
rm -rf "$OUT/rst"
install -d -m 0700 "$OUT/rst"
antsibull-docs --config-file "$REPO/docs/sphinx/antsibull-docs.cfg" collection --use-current \
    --squash-hierarchy --dest-dir "$OUT/rst" refit.containers 2>&1 | tee "$log"
# antsibull-docs writes an error page and goes on when a plugin's docs are wrong.
if grep -qE 'ERROR|WARNING' "$log"; then
    echo "docs: antsibull-docs reported problems (above); fix the docs they name" >&2
    exit 1
fi
cp "$REPO/docs/sphinx/ansible_links.rst" "$OUT/rst/"
sphinx-build -q -W --keep-going -b html -c "$REPO/docs/sphinx" "$OUT/rst" "$OUT/html"
echo "docs: $OUT/html/index.html"
