# shellcheck shell=bash disable=SC2154
# The commands testbed.sh dispatches to: up, add, remove, down, reboot, env. Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

# Anything a killed bed left: processes named in pid files, overlay mounts, cgroup dirs.
clean_stale() {
    [ -d "$RUN" ] || return 0
    if [ -d "$RUN/hosts" ]; then
        for d in "$RUN"/hosts/*/; do
            [ -d "$d" ] && stop_host "$(basename "$d")"
        done
    fi
    stop_registry
    stop_login_registry
    stop_tls_registry
    while read -r mnt; do umount -l "$mnt" || true; done < <(awk -v r="$RUN/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r)
    for h in "${CGROUP_HIERARCHIES[@]}"; do
        for c in "$h/$BED".*; do
            [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
    done
    rm -rf "$RUN"
}

cmd_up() {
    local hosts=("$@")
    [ ${#hosts[@]} -gt 0 ] || hosts=(th1)
    [ "$(id -u)" = 0 ] || die "the testbed needs root (systemd-nspawn, mounts, cgroups)"
    local t0
    t0=$(now_ms)
    phase clean-stale clean_stale
    mkdir -p "$RUN/hosts" "$CACHE"
    phase host-packages install_host_packages
    phase rootfs build_rootfs
    phase venv make_venv
    phase registry start_registry
    phase login-registry start_login_registry
    phase tls-registry start_tls_registry
    for h in "${hosts[@]}"; do phase "boot-$h" boot_host "$h"; done
    phase images push_images
    [ -z "${REFIT_PULP:-}" ] || phase pulp-images pulp_images
    for h in "${hosts[@]}"; do phase "wait-$h" wait_host "$h"; done
    write_ansible_config "${hosts[@]}"
    printf '%s\n' "${hosts[@]}" > "$RUN/hosts.list"
    log "up in $(($(now_ms) - t0)) ms: hosts ${hosts[*]}, registry $REGISTRY; for Ansible: eval \"\$($0 env)\""
}

# Boots HOSTs beside the hosts of the bed that is up, and rewrites the inventory with all of
# them (the new ones last, so the others keep their ports); `up` would stop the others.
cmd_add() {
    [ -f "$RUN/hosts.list" ] || die "no bed is up; run: $0 up $*"
    local hosts new=() h t0
    mapfile -t hosts < "$RUN/hosts.list"
    t0=$(now_ms)
    for h in "$@"; do
        if [[ " ${hosts[*]} ${new[*]} " == *" $h "* ]]; then
            log "$h is in the bed already"
        else
            new+=("$h")
        fi
    done
    for h in "${new[@]}"; do phase "boot-$h" boot_host "$h"; done
    for h in "${new[@]}"; do phase "wait-$h" wait_host "$h"; done
    hosts+=("${new[@]}")
    write_ansible_config "${hosts[@]}"
    printf '%s\n' "${hosts[@]}" > "$RUN/hosts.list"
    log "added ${new[*]:-nothing} in $(($(now_ms) - t0)) ms: hosts ${hosts[*]}"
}

# Stops HOSTs of the bed that is up and drops them from it, disk and all; the rest run on.
cmd_remove() {
    local t0 keep=() h
    t0=$(now_ms)
    [ -f "$RUN/hosts.list" ] || die "no bed is up"
    # On fd 3: stop_host's commands keep stdin.
    while read -r -u 3 h; do
        if [[ " $* " == *" $h "* ]]; then phase "stop-$h" stop_host "$h"; else keep+=("$h"); fi
    done 3< "$RUN/hosts.list"
    write_ansible_config "${keep[@]}"
    if [ ${#keep[@]} -gt 0 ]; then printf '%s\n' "${keep[@]}"; fi > "$RUN/hosts.list"
    log "removed $* in $(($(now_ms) - t0)) ms: hosts ${keep[*]:-none}"
}

cmd_down() {
    local t0
    t0=$(now_ms)
    clean_stale
    log "down in $(($(now_ms) - t0)) ms"
}

cmd_reboot() {
    local name=$1 t0 hosts
    [ -f "$(host_dir "$name")/nspawn.pid" ] || die "host $name is not up; run: $0 up $name"
    t0=$(now_ms)
    phase "poweroff-$name" stop_host "$name" keep
    phase "boot-$name" boot_host "$name"
    phase "wait-$name" wait_host "$name"
    mapfile -t hosts < "$RUN/hosts.list"
    write_ansible_config "${hosts[@]}"
    log "rebooted $name in $(($(now_ms) - t0)) ms; its init is pid $(leader_pid "$name") now (inventory rewritten)"
}

cmd_env() {
    echo "export ANSIBLE_CONFIG=$RUN/ansible.cfg"
    echo "export PATH=$VENV/bin:\$PATH"
    echo "export REFIT_TESTBED_RUN=$RUN"
}
