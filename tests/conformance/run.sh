#!/usr/bin/env bash
# The quadlet conformance suite (core/tests/conformance.rs) against the test hosts' quadlet.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
REFIT_QUADLET="$REPO/tests/conformance/quadlet.sh" exec cargo test -q -p refit-core --locked \
    --test conformance -- --ignored --nocapture
