#!/bin/sh
# The migration command of the "migrating" app: writes this build's schema version, and appends
# "FROM -> TO" to SCHEMA_FILE.done once it has, so a test counts the migrations that completed.
set -e
: "${SCHEMA_FILE:?set SCHEMA_FILE to the schema file in the data volume}"
from=$(cat "$SCHEMA_FILE" 2>/dev/null || echo 0)
echo "migrating $from -> $SCHEMA"
# A migration that takes its time, so a fault test can strike while it runs.
sleep "${MIGRATE_SECONDS:-0}"
echo "$SCHEMA" > "$SCHEMA_FILE.tmp"
mv "$SCHEMA_FILE.tmp" "$SCHEMA_FILE"
echo "$from -> $SCHEMA" >> "$SCHEMA_FILE.done"
