#!/bin/sh
# The migration command of the "migrating" app: writes this build's schema version.
set -e
: "${SCHEMA_FILE:?set SCHEMA_FILE to the schema file in the data volume}"
echo "migrating $(cat "$SCHEMA_FILE" 2>/dev/null || echo 0) -> $SCHEMA"
# A migration that takes its time, so a fault test can strike while it runs.
sleep "${MIGRATE_SECONDS:-0}"
echo "$SCHEMA" > "$SCHEMA_FILE.tmp"
mv "$SCHEMA_FILE.tmp" "$SCHEMA_FILE"
