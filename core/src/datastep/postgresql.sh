# The PostgreSQL major upgrade's work inside its one-off containers (run by `sh -c`, with the
# phase and its arguments after `$0`). The old cluster is mounted read-only at /old, the new
# place (the new major's data volume) at /new. Lines `refit-data-step: KEY=VALUE` are the
# results the module reads; everything else is the log a failure quotes.
#
#   probe                      (old image, /old)  the old major, its size, the free space
#   major                      (new image)        the major the new image runs
#   prepare METHOD TABLE...    (old image, /old, /new)  a private copy of the old cluster, its
#                              row counts, and the dump (dump) or the old binaries (pg_upgrade)
#   build METHOD TRANSFER ANALYZE TABLE... -- QUERY...
#                              (new image, /new)  the new cluster, checked, then moved in place
set -eu
phase=$1
shift
say() { echo "refit-data-step: $*"; }
die() { echo "refit-data-step error: $*" >&2; exit 3; }
as_pg() { setpriv --reuid postgres --regid postgres --init-groups "$@"; }
newest_bin() { echo "/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin"; }
# Refit's work lives in hidden dirs of the new volume, which is the data dir the new unit mounts:
# the state of the step, and the scratch (the copy of the old cluster, the dump, the old binaries).
mark=/new/.refit-data-step
scratch=/new/.refit-scratch
sock=/tmp/refit-pg

start() { # DATA BIN: a server on a socket only, no TCP: nothing but this step reaches it
    mkdir -p "$sock" && chown postgres "$sock"
    as_pg "$2/pg_ctl" -D "$1" -l /tmp/refit-pg.log -w -t 120 -s \
        -o "-c listen_addresses= -c unix_socket_directories=$sock -c port=5432 -c jit=off" start ||
        { cat /tmp/refit-pg.log >&2; die "the server did not start on $1"; }
}
stop() { as_pg "$2/pg_ctl" -D "$1" -m fast -w -t 120 -s stop; }
sql() { as_pg "$bin/psql" -X -q -h "$sock" -p 5432 -U postgres -v ON_ERROR_STOP=1 "$@"; }
databases() { sql -d postgres -Atc "SELECT datname FROM pg_database WHERE datallowconn ORDER BY datname"; }
# DB.SCHEMA.TABLE (the module checked each part: letters, digits, _): its row count.
count() {
    db=${1%%.*}
    sql -d "$db" -Atc "SELECT count(*) FROM ${1#*.}"
}
# What identifies the old cluster as it is now: a new place built from it is current only while
# this is unchanged (a boot that started the old release on it changes its checkpoint).
fingerprint() {
    "$(newest_bin)/pg_controldata" /old | grep -E '^(Database system identifier|Latest checkpoint location)'
}

case $phase in
probe)
    [ -s /old/PG_VERSION ] || die "no PostgreSQL cluster in the old volume (no PG_VERSION)"
    say "major=$(cat /old/PG_VERSION)"
    say "size_kb=$(du -sk /old | cut -f1)"
    say "avail_kb=$(df -Pk /old | awk 'NR==2 {print $4}')"
    ;;
major)
    say "major=$(basename "$(dirname "$(newest_bin)")")"
    ;;
prepare)
    method=$1
    shift
    bin=$(newest_bin)
    now=$(fingerprint)
    if [ -f "$mark/done" ] && [ "$(cat "$mark/done")" = "$now" ]; then
        say "already=1"
        exit 0
    fi
    # Only a place this step made (or an empty one) is cleared: anything else is someone's data.
    if [ ! -d "$mark" ] && [ -n "$(ls -A /new)" ]; then
        die "the new volume holds files this step did not make; give the new major a volume of its own, or empty it"
    fi
    find /new -mindepth 1 -maxdepth 1 ! -name .refit-data-step -exec rm -rf {} +
    mkdir -p "$mark" "$scratch"
    rm -f "$mark/done"
    printf '%s\n' "$now" > "$mark/source"
    # A private copy: the old server writes as it starts (its pid file, a checkpoint as it stops),
    # and the old directory must stay as it was, the way back.
    cp -a --reflink=auto /old "$scratch/data"
    chown -R postgres:postgres "$scratch/data"
    chmod 0700 "$scratch/data"
    start "$scratch/data" "$bin"
    : > "$scratch/counts"
    for t in "$@"; do
        n=$(count "$t") || die "cannot count the rows of $t on the old cluster; name tables that exist"
        echo "$t $n" >> "$scratch/counts"
    done
    if [ "$method" = dump ]; then
        mkdir -p "$scratch/dump"
        chown postgres "$scratch/dump"
        as_pg "$bin/pg_dumpall" -h "$sock" -p 5432 -U postgres --globals-only -f "$scratch/dump/globals.sql"
        i=0
        for db in $(databases); do
            [ "$db" = template1 ] && continue
            i=$((i + 1))
            echo "$db" > "$scratch/dump/$i.name"
            as_pg "$bin/pg_dump" -h "$sock" -p 5432 -U postgres -Fc -f "$scratch/dump/$i.dump" "$db"
        done
        stop "$scratch/data" "$bin"
        # The dump holds what the copy did: the copy goes, so the disk holds one of them.
        rm -rf "$scratch/data"
    else
        stop "$scratch/data" "$bin"
        # The old major's binaries, with the libraries they load and their own loader, so they
        # run in the new image whatever its distribution: pg_upgrade needs both majors at once.
        major=$(basename "$(dirname "$bin")")
        root=$scratch/oldroot/usr/lib/postgresql/$major
        mkdir -p "$root/bin" "$scratch/oldroot/libs" "$scratch/oldroot/usr/share/postgresql"
        cp -a "$bin" "$root/bin.real"
        cp -a "$(dirname "$bin")/lib" "$root/lib"
        cp -a "/usr/share/postgresql/$major" "$scratch/oldroot/usr/share/postgresql/"
        loader=
        for f in "$root"/bin.real/* "$root"/lib/*.so; do
            ldd "$f" 2> /dev/null | awk '/=> \// {print $3} /^\t\/[^ ]*ld-linux/ {print $1}'
        done | sort -u > /tmp/refit-libs
        while read -r lib; do
            cp -L "$lib" "$scratch/oldroot/libs/"
            case $lib in */ld-linux*) loader=$(basename "$lib") ;; esac
        done < /tmp/refit-libs
        [ -n "$loader" ] || die "no dynamic loader found for $bin/postgres"
        for f in "$root"/bin.real/*; do
            w=$root/bin/$(basename "$f")
            printf '#!/bin/sh\nexec %s/libs/%s --inhibit-cache --library-path %s/libs --argv0 "$0" %s "$@"\n' \
                "$scratch/oldroot" "$loader" "$scratch/oldroot" "$f" > "$w"
            chmod 0755 "$w"
        done
        say "old_bindir=$root/bin"
    fi
    ;;
build)
    method=$1 transfer=$2 analyze=$3
    shift 3
    bin=$(newest_bin)
    new=$scratch/new
    rm -rf "$new"
    mkdir -p "$new"
    chown postgres:postgres "$new"
    chmod 0700 "$new"
    as_pg "$bin/initdb" -D "$new" -U postgres --auth=trust -E UTF8 > /dev/null
    if [ "$method" = dump ]; then
        start "$new" "$bin"
        # The bootstrap superuser is there already: its CREATE ROLE alone would fail.
        grep -v '^CREATE ROLE postgres;$' "$scratch/dump/globals.sql" | sql -d postgres -f -
        for n in "$scratch"/dump/*.name; do
            db=$(cat "$n")
            if [ "$db" = postgres ]; then
                as_pg "$bin/pg_restore" -h "$sock" -p 5432 -U postgres --exit-on-error -d postgres "${n%.name}.dump"
            else
                as_pg "$bin/pg_restore" -h "$sock" -p 5432 -U postgres --exit-on-error --create -d postgres "${n%.name}.dump"
            fi
        done
        stop "$new" "$bin"
    else
        chown -R postgres:postgres "$scratch/data"
        old_bin=$(echo "$scratch"/oldroot/usr/lib/postgresql/*/bin)
        cd /tmp
        as_pg "$bin/pg_upgrade" -b "$old_bin" -B "$bin" -d "$scratch/data" -D "$new" -U postgres \
            "--$transfer" > /tmp/refit-pg-upgrade.log 2>&1 ||
            { cat /tmp/refit-pg-upgrade.log >&2; die "pg_upgrade failed (its log is above)"; }
        tail -3 /tmp/refit-pg-upgrade.log
    fi
    # The old cluster's settings and access rules carry over (initdb wrote the new major's defaults).
    src=/old
    for f in postgresql.conf pg_hba.conf pg_ident.conf postgresql.auto.conf; do
        [ -f "$src/$f" ] && cp "$src/$f" "$new/$f" && chown postgres:postgres "$new/$f"
    done
    # The checks, before anything else starts on the new cluster.
    start "$new" "$bin"
    for db in $(databases); do
        sql -d "$db" -Atc 'SELECT 1' > /dev/null || die "database $db does not answer on the new cluster"
    done
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        want=$(awk -v t="$1" '$1 == t {print $2}' "$scratch/counts")
        got=$(count "$1")
        [ "$want" = "$got" ] || die "table $1 holds $got rows on the new cluster, $want on the old"
        say "rows $1=$got"
        shift
    done
    [ $# -gt 0 ] && shift
    for q in "$@"; do
        db=${q%%:*}
        r=$(sql -d "$db" -Atc "${q#*:}") || die "check query on $db failed: ${q#*:}"
        [ "$r" = t ] || die "check query on $db answered '$r', not true: ${q#*:}"
    done
    if [ "$analyze" = stages ]; then
        as_pg "$bin/vacuumdb" -h "$sock" -p 5432 -U postgres --all --analyze-in-stages -q
    else
        as_pg "$bin/vacuumdb" -h "$sock" -p 5432 -U postgres --all --analyze-only -q
    fi
    stop "$new" "$bin"
    # Into place: the volume's root is the data dir the new unit mounts. Renames on one file
    # system; the marker, last, says the place is complete and from which old cluster.
    find "$new" -mindepth 1 -maxdepth 1 -exec mv -t /new {} +
    rm -rf "$scratch"
    sync
    cp "$mark/source" "$mark/done.tmp"
    sync
    mv "$mark/done.tmp" "$mark/done"
    sync
    say "built=1"
    ;;
*) die "unknown phase $phase" ;;
esac
