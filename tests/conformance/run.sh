#!/usr/bin/env bash
# The quadlet conformance suite (core/tests/conformance.rs) against the test hosts' quadlet.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
# podman's test/e2e/quadlet, as the peer suite beside the checkout holds it: read in place, never
# copied into the project (its README asks so). CI has it; a clone without it skips the suite.
CORPUS=${REFIT_QUADLET_CORPUS:-$REPO/../shared/quadlet-corpus/podman-e2e}
# The named cases (repeated section, continuation, ...) are the project's own and always run.
skip=()
if [ ! -f "$CORPUS/_quadlet_test.go" ]; then
    if [ "${CI:-}" = true ]; then
        echo "conformance: no quadlet corpus at $CORPUS; CI must have shared/ beside the checkout" >&2
        exit 1
    fi
    echo "conformance: the corpus is skipped, none at $CORPUS (set REFIT_QUADLET_CORPUS to podman's test/e2e/quadlet)"
    skip=(--skip every_corpus_unit_reads_as_quadlet_reads_it)
fi
export REFIT_QUADLET_CORPUS=$CORPUS
REFIT_QUADLET="$REPO/tests/conformance/quadlet.sh" exec cargo test -q -p refit-core --locked \
    --test conformance -- --ignored --nocapture "${skip[@]}"
