#!/bin/sh
# The foremanctl way's in-place upgrade of the database volume (mounted at its data directory),
# as sclorg's image does it for foremanctl's upgrade.yaml: the old cluster moved aside within the
# volume, a new cluster made by the new major's initdb, pg_upgrade from the old one (--copy, or
# --link with UPGRADE_TRANSFER=link), the new cluster moved to the volume's root, and the old one
# removed. Nothing is kept: a failure after the move leaves the volume to be mended by hand.
# Exits 0 without a change when the volume's cluster is already the new major.
#
# It runs in the new major's image (Debian trixie's 17) with the old major's image (bookworm's
# 15) mounted read-only at /old: the container holds both majors' binaries, as sclorg's does.
# The old binaries run on trixie's glibc (backward compatible) and load the libraries trixie
# lacks (ICU 72, LLVM 14: sonames absent from it) from the old image, through wrappers that
# set LD_LIBRARY_PATH to those alone.
set -eu
data=/var/lib/postgresql/data
old_major=15 new_major=17
work=$data/.upgrade
old_bin=/run/old-bin
as_pg() { setpriv --reuid postgres --regid postgres --init-groups "$@"; }
mkdir -p "$old_bin/compat"
for lib in /old/usr/lib/x86_64-linux-gnu/*.so.*; do
    [ -e "/usr/lib/x86_64-linux-gnu/${lib##*/}" ] || ln -s "$lib" "$old_bin/compat/"
done
for f in "/old/usr/lib/postgresql/$old_major/bin/"*; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$old_bin/compat" "$f" > "$old_bin/${f##*/}"
    chmod 0755 "$old_bin/${f##*/}"
done
"$old_bin/postgres" --version > /dev/null
have=$(cat "$data/PG_VERSION" 2> /dev/null || true)
if [ "$have" = "$new_major" ]; then
    echo "pg-upgrade-in-place: the cluster is already $new_major"
    exit 0
fi
[ "$have" = "$old_major" ] || { echo "pg-upgrade-in-place: no $old_major cluster in $data (PG_VERSION: '$have')" >&2; exit 1; }
mkdir -p "$work/old" /run/postgresql
find "$data" -mindepth 1 -maxdepth 1 ! -name .upgrade -exec mv -t "$work/old" {} +
chown -R postgres:postgres "$work" /run/postgresql
chmod 0700 "$work/old"
as_pg "/usr/lib/postgresql/$new_major/bin/initdb" -D "$work/new" -U postgres --auth=trust -E UTF8 > /dev/null
cd "$work"
as_pg "/usr/lib/postgresql/$new_major/bin/pg_upgrade" -U postgres \
    -b "$old_bin" -B "/usr/lib/postgresql/$new_major/bin" \
    -d "$work/old" -D "$work/new" --"${UPGRADE_TRANSFER:-copy}"
# The server's own settings (address, port, socket) as the old cluster had them.
grep -E '^(listen_addresses|port|unix_socket_directories) ' "$work/old/postgresql.conf" >> "$work/new/postgresql.conf"
rm -rf "$work/old"
find "$work/new" -mindepth 1 -maxdepth 1 -exec mv -t "$data" {} +
cd /
rm -rf "$work"
echo "pg-upgrade-in-place: $old_major to $new_major done"
