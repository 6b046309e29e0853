#!/usr/bin/env bash
# Builds the Pulp testbed images offline and pushes them to the bed's registry:
#   pulp-postgres:17   PostgreSQL 17 from Debian trixie
#   pulp-postgres:15   PostgreSQL 15 from Debian bookworm (a debootstrap of its own: no trixie
#                      package holds 15); the old major of a stream that moves the database to 17
#   pulp-postgres:17-broken  17 whose server never starts (a data step's failure, caused)
#   pulp:3.121         pulpcore 3.121 (stream A), also as pulp:3.121-r1; pulp:3.121-r2 is its
#                      rebuild (a z-stream: a new digest), which a scenario moves the tag to
#   pulp:3.122         pulpcore 3.122 (stream B, one more core migration than A)
#   pulp:3.123         a broken next build of B: one more migration, then every service fails
# Packages are downloaded on this host (PyPI wheels, trixie's .debs through apt in a throw-away
# overlay of the rootfs) into $CACHE/pulp; each build runs with --network none from there. Every
# image is tagged in host storage by the hash of its recipe, so a later bed only pushes it.
# Called by testbed.sh (`pulp-images`, or `up` with REFIT_PULP=1) with CACHE, RUN, REGISTRY and
# CONTAINERS_CONF set. `build.sh build-only` builds without pushing (no bed needed but the rootfs).
set -euo pipefail
shopt -s inherit_errexit

HERE=$(cd "$(dirname "$0")" && pwd)
: "${CACHE:?}" "${RUN:?}" "${REGISTRY:?}"
ROOTFS=${ROOTFS:?testbed.sh names the rootfs of its recipe}
STORE=$CACHE/pulp
STREAM_A=3.121.3
STREAM_B=3.122.2
PG_PACKAGES=(postgresql-17)
# The old major: bookworm's own PostgreSQL, debootstrapped into a rootfs of its own under $CACHE.
OLD_PG_SUITE=bookworm
OLD_PG_PACKAGES=(postgresql-15)
# psycopg's wheel brings its own libpq; pip comes as a wheel because trixie's python3 lacks ensurepip.
PY_EXTRA=(gunicorn pip)
# What trimming leaves out of the rootfs that every image starts from.
TRIM=(./usr/share/doc ./usr/share/man ./usr/share/locale ./usr/share/info ./var/cache/apt ./var/lib/apt/lists
    ./usr/bin/podman ./usr/libexec/podman ./var/lib/containers ./etc/ssh/ssh_host_*)

log() { printf '[pulp-images %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }
exists() { podman image exists "$1"; }

# trixie's .debs with their dependencies, resolved by apt inside an overlay of the rootfs (the
# rootfs itself stays as it is).
fetch_debs() {
    local out=$1 w=$RUN/pulp-apt
    [ -f "$out/.done" ] && return
    rm -rf "$out" "$w"
    mkdir -p "$out" "$w"/{upper,work,m}
    mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$w/upper,workdir=$w/work" "$w/m"
    cp /etc/resolv.conf "$w/m/etc/resolv.conf"
    if ! chroot "$w/m" sh -c "apt-get update -qq && apt-get install -y -qq --download-only --no-install-recommends ${PG_PACKAGES[*]}" > "$STORE/apt.log" 2>&1; then
        umount "$w/m"
        die "apt could not download ${PG_PACKAGES[*]}; see $STORE/apt.log"
    fi
    cp "$w"/m/var/cache/apt/archives/*.deb "$out/"
    umount "$w/m"
    rm -rf "$w"
    touch "$out/.done"
}

# Wheels for trixie's Python 3.13. A dependency published only as an sdist (drf-access-policy)
# is built here into a pure-Python wheel, then the download is tried again (bounded).
fetch_wheels() {
    local version=$1 out=$2 built=$STORE/built missing
    [ -f "$out/.done" ] && return
    mkdir -p "$out" "$built"
    for _ in 1 2 3 4 5 6; do
        if missing=$(pip download -q --disable-pip-version-check -d "$out" --find-links "$built" \
            --python-version 3.13 --implementation cp --abi cp313 --only-binary=:all: \
            --platform manylinux_2_39_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 --platform any "pulpcore==$version" "${PY_EXTRA[@]}" 2>&1); then
            cp "$built"/*.whl "$out/" 2>/dev/null || true
            touch "$out/.done"
            return
        fi
        missing=$(grep -o 'satisfies the requirement [^ ]*' <<< "$missing" | head -1 | awk '{print $4}')
        [ -n "$missing" ] || die "pip download of pulpcore $version failed; run it by hand to see why"
        log "wheels: building $missing from its sdist"
        pip wheel -q --disable-pip-version-check --no-deps -w "$built" "$missing" > /dev/null
    done
    die "pip download of pulpcore $version still misses packages after 6 rounds"
}

# The trimmed trixie rootfs as an image.
base_image() {
    local key ref
    key=$( (cat "$ROOTFS/.refit-recipe"; printf '%s\n' "${TRIM[@]}") | sha256sum | cut -c1-16)
    ref=localhost/refit-pulp-base:$key
    if ! exists "$ref"; then
        local ex=()
        for t in "${TRIM[@]}"; do ex+=("--exclude=$t"); done
        tar -C "$ROOTFS" --numeric-owner "${ex[@]}" -c . | podman import -q - "$ref" > /dev/null
    fi
    echo "$ref"
}

# build REF CONTAINERFILE CONTEXT [BUILD-ARG...]: builds into a recipe-keyed tag unless it exists.
build() {
    local ref=$1 file=$2 ctx=$3
    shift 3
    if ! exists "$ref"; then
        local t0=$SECONDS args=() arg
        for arg in "$@"; do args+=(--build-arg "$arg"); done
        podman build -q --pull=never --network none --format docker "${args[@]}" -f "$file" -t "$ref" "$ctx" > /dev/null
        log "built $ref in $((SECONDS - t0)) s"
    fi
}

# Straight from the recipe's tag to the registry: no local name for it, which another bed
# (another registry on the same 127.0.0.1:5000, tests/testbed/lane.sh) could retag meanwhile.
push() { podman push -q --tls-verify=false "$1" "docker://$REGISTRY/$2"; }

pulp_image() {
    local version=$1 base=$2 ctx key ref
    fetch_wheels "$version" "$STORE/wheels/$version"
    key=$(hash_of "$HERE/Containerfile.pulp" "$HERE/settings.py" "$HERE/pulp-entry.sh" <(echo "$base $version"))
    ref=localhost/refit-pulp:$version-$key
    if ! exists "$ref"; then
        ctx=$RUN/pulp-ctx
        rm -rf "$ctx"
        mkdir -p "$ctx"
        cp "$HERE/settings.py" "$HERE/pulp-entry.sh" "$ctx/"
        cp -r "$STORE/wheels/$version" "$ctx/wheels"
        build "$ref" "$HERE/Containerfile.pulp" "$ctx" "BASE=$base" "PULPCORE=$version"
        rm -rf "$ctx"
    fi
    echo "$ref"
}

# bookworm with PostgreSQL 15 as an image: debootstrap (the only step that needs the network,
# about a minute, cached by its recipe), trimmed, imported, then the same entrypoint as 17's.
old_pg_image() {
    local key root ref base mirror
    key=$(hash_of "$HERE/Containerfile.postgres-old" "$HERE/postgres-entry.sh" <(echo "$OLD_PG_SUITE ${OLD_PG_PACKAGES[*]} ${TRIM[*]}"))
    ref=localhost/refit-pulp-postgres-old:$key
    exists "$ref" && { echo "$ref"; return; }
    root=$CACHE/rootfs-$OLD_PG_SUITE-pg-$key
    if [ ! -f "$root/.done" ]; then
        mirror=${REFIT_TESTBED_MIRROR:-http://deb.debian.org/debian}
        log "old PostgreSQL: debootstrap $OLD_PG_SUITE with ${OLD_PG_PACKAGES[*]} (about a minute)"
        rm -rf "$root"
        mkdir -p "$root/etc/postgresql-common"
        # No cluster at install: the entrypoint makes one on the data volume.
        echo 'create_main_cluster = false' > "$root/etc/postgresql-common/createcluster.conf"
        debootstrap --variant=minbase --include="$(IFS=,; echo "${OLD_PG_PACKAGES[*]}")" \
            "$OLD_PG_SUITE" "$root" "$mirror" > "$STORE/debootstrap-$OLD_PG_SUITE.log" 2>&1 ||
            die "debootstrap of $OLD_PG_SUITE failed; see $STORE/debootstrap-$OLD_PG_SUITE.log"
        rm -f "$root"/var/cache/apt/archives/*.deb
        touch "$root/.done"
    fi
    base=localhost/refit-pulp-base-$OLD_PG_SUITE:$key
    if ! exists "$base"; then
        local ex=(--exclude=./.done)
        for t in "${TRIM[@]}"; do ex+=("--exclude=$t"); done
        tar -C "$root" --numeric-owner "${ex[@]}" -c . | podman import -q - "$base" > /dev/null
    fi
    build "$ref" "$HERE/Containerfile.postgres-old" "$HERE" "BASE=$base"
    echo "$ref"
}

main() {
    [ -d "$ROOTFS" ] || die "no rootfs at $ROOTFS; run testbed.sh up first"
    mkdir -p "$STORE"
    local t0=$SECONDS base pg pg_broken old_pg a b broken key ctx
    base=$(base_image)

    key=$(hash_of "$HERE/Containerfile.postgres" "$HERE/postgres-entry.sh" <(echo "$base ${PG_PACKAGES[*]}"))
    pg=localhost/refit-pulp-postgres:$key
    if ! exists "$pg"; then
        fetch_debs "$STORE/debs-$key"
        ctx=$RUN/pulp-ctx
        rm -rf "$ctx"
        mkdir -p "$ctx"
        cp "$HERE/postgres-entry.sh" "$ctx/"
        cp -r "$STORE/debs-$key" "$ctx/debs"
        build "$pg" "$HERE/Containerfile.postgres" "$ctx" "BASE=$base"
        rm -rf "$ctx"
    fi

    old_pg=$(old_pg_image)
    key=$(hash_of "$HERE/Containerfile.postgres-broken" <(echo "$pg"))
    pg_broken=localhost/refit-pulp-postgres-broken:$key
    build "$pg_broken" "$HERE/Containerfile.postgres-broken" "$HERE" "BASE=$pg"

    a=$(pulp_image "$STREAM_A" "$base")
    b=$(pulp_image "$STREAM_B" "$base")
    key=$(hash_of "$HERE/Containerfile.pulp-broken" "$HERE/0900_refit_broken.py" <(echo "$b"))
    broken=localhost/refit-pulp-broken:$key
    build "$broken" "$HERE/Containerfile.pulp-broken" "$HERE" "BASE=$b"
    # The z-stream of A: the same content under a new digest, as a distribution's rebuild is.
    build "$a-r2" - "$HERE" "BASE=$a" <<< $'ARG BASE\nFROM ${BASE}\nLABEL refit.rebuild=2'

    if [ "${1:-}" = build-only ]; then
        log "built in $((SECONDS - t0)) s (not pushed)"
        return
    fi
    push "$pg" pulp-postgres:17
    push "$pg_broken" pulp-postgres:17-broken
    push "$old_pg" pulp-postgres:15
    push "$a" "pulp:${STREAM_A%.*}"
    push "$a" "pulp:${STREAM_A%.*}-r1"
    push "$a-r2" "pulp:${STREAM_A%.*}-r2"
    push "$b" "pulp:${STREAM_B%.*}"
    push "$broken" pulp:3.123
    log "images ready in $((SECONDS - t0)) s: $(podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep refit-pulp | tr '\n' ';')"
}

main "$@"
