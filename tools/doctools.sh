# shellcheck shell=bash
# Sourced by tools/docs.sh and tools/changelog.sh with a scratch dir: puts antsibull-docs,
# antsibull-changelog and ansible-core (tools/docs-requirements.txt, pinned, in a venv of their
# own) on PATH, and makes the checkout a collection that ansible-doc finds.
CACHE=${REFIT_TESTBED_CACHE:-/var/cache/refit-testbed}
mapfile -t doc_specs < "$REPO/tools/docs-requirements.txt"
"$REPO/tools/venv.sh" "$CACHE/docs-venv" "${doc_specs[@]}"
export PATH=$CACHE/docs-venv/bin:$PATH
mkdir -p "$1/collections/ansible_collections/refit"
ln -sfn "$REPO" "$1/collections/ansible_collections/refit/containers"
export ANSIBLE_COLLECTIONS_PATH=$1/collections
