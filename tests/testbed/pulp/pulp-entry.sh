#!/bin/sh
# Every pulp container shares /var/lib/pulp: the first one to start makes the Django secret key
# and the database fields' key there (never in the image, never in a file of the repository),
# each written whole and linked into place so concurrent starts agree on one.
set -eu
mkdir -p /var/lib/pulp/media /var/lib/pulp/tmp
make_key() {
    [ -s "$1" ] && return 0
    python3 -c "$2" > "$1.$$"
    ln "$1.$$" "$1" 2>/dev/null || true
    rm -f "$1.$$"
}
make_key /var/lib/pulp/secret_key 'import secrets; print(secrets.token_urlsafe(48))'
make_key /var/lib/pulp/database_fields.symmetric.key 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'
# The broken build fails here, after its migration ran: only the migration command passes.
if [ -n "${PULP_REFIT_BROKEN:-}" ] && [ "${1:-}" != pulpcore-manager ]; then
    echo "pulp-entry: this build is broken on purpose (PULP_REFIT_BROKEN)" >&2
    exit 3
fi
exec "$@"
