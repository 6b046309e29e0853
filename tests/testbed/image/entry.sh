#!/bin/sh
# PID 1 of every test container. busybox sh as PID 1 ignores SIGTERM unless trapped, and an
# untrapped stop would cost podman's 10 s stop timeout on every restart.
trap 'exit 0' TERM
echo "svc $VERSION mode=$MODE schema=$SCHEMA port=$PORT"
case "$MODE" in
crash)
    echo "crashing now" >&2
    exit 1 ;;
hang)
    # Runs but never listens, so any health check against /version fails forever.
    while true; do sleep 1 & wait $!; done ;;
stubborn)
    # Ignores SIGTERM: a stop must fall back to SIGKILL.
    trap '' TERM
    while true; do sleep 1; done ;;
esac
if [ -n "${SCHEMA_FILE:-}" ]; then
    # A "migrating" app: it refuses to start on a schema older than its own, which makes a
    # missed migration visible as a failed start.
    have=$(cat "$SCHEMA_FILE" 2>/dev/null || echo 0)
    if [ "$have" -lt "$SCHEMA" ]; then
        echo "schema $have in $SCHEMA_FILE is older than $SCHEMA: run the migrations first" >&2
        exit 1
    fi
fi
mkdir -p /www
echo "$VERSION" > /www/version
httpd -f -p "127.0.0.1:$PORT" -h /www &
wait $!
