#!/bin/sh
# Makes a cluster on the data volume at its first start (trust on loopback only: the bed's hosts
# share one network, and nothing but this machine reaches 127.0.0.1), then runs postgres as
# its own user. PGPORT and PGDATABASE name the port and the database the app uses; with arguments, it runs them.
set -eu
# A one-off (pg_dump, psql) runs as it is, against the server named by PGHOST and PGPORT.
[ $# -eq 0 ] || exec "$@"
data=/var/lib/postgresql/data
bin=$(echo /usr/lib/postgresql/*/bin)
port=${PGPORT:-15432}
mkdir -p "$data" /run/postgresql
chown postgres:postgres "$data" /run/postgresql
chmod 0700 "$data"
as_pg() { setpriv --reuid postgres --regid postgres --init-groups "$@"; }
if [ ! -s "$data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 > /dev/null
    printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '/run/postgresql'\n" "$port" >> "$data/postgresql.conf"
    if [ -n "${PGDATABASE:-}" ]; then
        as_pg "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=" -w -s start > /dev/null
        as_pg "$bin/createdb" -h /run/postgresql -p "$port" "$PGDATABASE"
        as_pg "$bin/pg_ctl" -D "$data" -m fast -w -s stop
    fi
fi
exec setpriv --reuid postgres --regid postgres --init-groups "$bin/postgres" -D "$data"
