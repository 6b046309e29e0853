#!/usr/bin/env bash
# VERSION is the one place refit's version is kept. This writes it into galaxy.yml and the
# workspace's Cargo.toml (and so Cargo.lock), touching each file only when it differs.
#
#   tools/version.sh          write VERSION into galaxy.yml, Cargo.toml, Cargo.lock
#   tools/version.sh --check  fail when either file disagrees with VERSION
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
v=$(tr -d ' \n' < VERSION)
[[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "version: VERSION holds '$v'; write a semantic version such as 1.2.3" >&2; exit 1; }

galaxy=$(sed -n 's/^version: *//p' galaxy.yml)
# The version line of [workspace.package], the one the crates inherit.
cargo=$(awk '/^\[/ {sec=$0} sec=="[workspace.package]" && /^version *=/ {gsub(/[" ]/, "", $3); print $3}' Cargo.toml)

if [ "${1:-}" = --check ]; then
    [ "$galaxy" = "$v" ] && [ "$cargo" = "$v" ] && exit 0
    echo "version: VERSION is $v, galaxy.yml $galaxy, Cargo.toml $cargo; run: make version" >&2
    exit 1
fi
[ "$galaxy" = "$v" ] || sed -i "s/^version: .*/version: $v/" galaxy.yml
if [ "$cargo" != "$v" ]; then
    # Before the edit: with Cargo.toml changed, a locked fetch would refuse the lock.
    tools/cargo-fetch.sh
    awk -v v="$v" '/^\[/ {sec=$0} sec=="[workspace.package]" && /^version *=/ {$0 = "version = \"" v "\""} {print}' Cargo.toml > Cargo.toml.new
    mv Cargo.toml.new Cargo.toml
    cargo update --workspace --offline --quiet
fi
echo "version: $v in galaxy.yml and Cargo.toml"
