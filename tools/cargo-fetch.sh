#!/usr/bin/env bash
# Fetches the workspace's locked crates into the cargo home when any is missing there; when all
# are there it touches no network (the offline scenarios take the network's registries away).
# Steps that build offline call it first: cargo resolves the whole workspace even for a crate
# with no dependencies, so on a fresh machine (an empty cargo home) an offline build fails with
# "no matching package named ... found".
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fetch --locked --offline --quiet 2> /dev/null && exit 0
echo "cargo-fetch: the cargo home (${CARGO_HOME:-~/.cargo}) lacks some of the workspace's crates; fetching them" >&2
cargo fetch --locked --quiet
