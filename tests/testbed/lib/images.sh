# shellcheck shell=bash disable=SC2154
# The test images: the shared base, the test service, the catalogue, Pulp and PostgreSQL. Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

# The layers every test image shares (busybox and the scripts), built once per content of
# tests/testbed/image and /bin/busybox and kept in host podman's storage across beds; prints its
# reference. Its RUN step is what makes a build slow (a container run), so only this has it.
base_image() {
    local dir=$REPO/tests/testbed/image key ref ctx svc
    svc=$(testsvc_binary)
    key=$(cat "$dir/Containerfile.base" "$dir/migrate.sh" "$svc" /bin/busybox | sha256sum | cut -c1-16)
    ref=localhost/refit-testbed-base:$key
    if ! host_podman image exists "$ref"; then
        ctx=$RUN/image-build
        rm -rf "$ctx"
        cp -r "$dir" "$ctx"
        cp /bin/busybox "$ctx/busybox"
        cp "$svc" "$ctx/testsvc"
        host_podman build -q --network none --format docker -f "$ctx/Containerfile.base" -t "$ref" "$ctx" > /dev/null
        rm -rf "$ctx"
    fi
    echo "$ref"
}

# The test service (tests/testbed/testsvc), static so it runs FROM scratch; prints its path. Its
# own target dir: the static flags would otherwise force rebuilds in the workspace's. One per
# checkout: cargo names a workspace member's build by its relative path, so two worktrees
# sharing one dir would take each other's binary for fresh and build the other's source. The crate
# has no dependencies, but cargo resolves the whole workspace: tools/cargo-fetch.sh fetches its
# crates when the cargo home lacks them (a fresh machine), then the build itself is offline.
testsvc_binary() {
    local target triple=x86_64-unknown-linux-gnu
    target=$CACHE/testsvc-target-$(printf %s "$REPO" | sha256sum | cut -c1-12)
    "$REPO/tools/cargo-fetch.sh" >&2
    (cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release --locked --offline \
        -p refit-testsvc --target "$triple" --target-dir "$target") >&2
    echo "$target/$triple/release/testsvc"
}

# Builds one test image with host podman and pushes it under every tag given. Only metadata is
# added to the base, so each build is a new image (a new digest) in about a second.
build_image() {
    local version=$1 mode=$2 schema=$3 base
    shift 3
    base=$(base_image)
    # --no-cache: buildah 1.28 reuses its cache across different --build-arg values.
    # Built under a name of this build's own and pushed to each tag: host storage is shared by
    # every bed, and two beds publishing the same REPO:TAG at once must not retag each other's.
    local own id
    own=localhost/refit-testbed-publish:$BED-$BASHPID-$(now_ms)
    id=$(host_podman build -q --no-cache --pull=never --network none --format docker \
        --build-arg BASE="$base" --build-arg VERSION="$version" --build-arg MODE="$mode" --build-arg SCHEMA="$schema" \
        -t "$own" -f "$REPO/tests/testbed/image/Containerfile" "$REPO/tests/testbed/image")
    local auth=()
    [ -f "$RUN/login-registry/auth.json" ] && auth=(--authfile "$RUN/login-registry/auth.json")
    for t in "$@"; do host_podman push -q --tls-verify=false "${auth[@]}" "$id" "docker://$t"; done
    # The registry holds it now. Host storage keeps only the base: every host podman call slows
    # with the images a suite publishes (a metadata-only build took 6 s beside 550 of them).
    # One removal at a time on the machine: a removal walks every image for parents, and another
    # bed's removal in that walk made podman warn "Failed to determine if an image is a parent".
    (flock 9 && host_podman rmi "$own" > /dev/null) 9> /run/refit-testbed-rmi.lock
}

# The catalogue every test can rely on. Streams are 1.0 .. 1.3; the stream tag (svc:1.0) moves
# to the newest z-release, and a z-release (svc:1.0.1) exists to be published under it.
push_images() {
    local r=$REGISTRY
    build_image 1.0.0 serve 1 $r/svc:1.0.0 $r/svc:1.0
    build_image 1.0.1 serve 1 $r/svc:1.0.1
    build_image 1.1.0 serve 2 $r/svc:1.1.0 $r/svc:1.1
    build_image 1.2.0 serve 3 $r/svc:1.2.0 $r/svc:1.2
    build_image 1.3.0 serve 4 $r/svc:1.3.0 $r/svc:1.3
    build_image 0.0.0 crash 1 $r/crash:latest
    build_image 0.0.0 hang 1 $r/hang:latest
    build_image 0.0.0 stubborn 1 $r/stubborn:latest
}

pulp_images() { ROOTFS=$ROOTFS CACHE=$CACHE RUN=$RUN REGISTRY=$REGISTRY CONTAINERS_CONF=$HOST_CONTAINERS_CONF "$REPO/tests/testbed/pulp/build.sh"; }
