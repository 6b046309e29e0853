# shellcheck shell=bash disable=SC2154
# The registries: plain, with a login, over TLS. Sourced by tests/testbed/testbed.sh, whose settings
# these functions read; moved from it unchanged.

start_registry() {
    mkdir -p "$RUN/registry-data"
    cat > "$RUN/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $RUN/registry-data}, delete: {enabled: true}}
http: {addr: $REGISTRY}
EOF
    (close_inherited_fds; exec docker-registry serve "$RUN/registry.yml") > "$RUN/registry.log" 2>&1 &
    write_pidfile "$RUN/registry.pid" $!
    for _ in $(seq 100); do
        curl -fs "http://$REGISTRY/v2/" > /dev/null && return
        sleep 0.1
    done
    die "the registry did not answer on $REGISTRY within 10 s; see $RUN/registry.log"
}

# The pid in registry.pid, while it is still this bed's registry. A pid file can outlive its
# process (it died; a second start that could not bind wrote its own pid), and its pid then
# names whatever process has it now, in any bed: a SIGSTOP sent there can freeze the shell of
# another bed's nsenter'd command, which leaves nsenter stopped for good (it stops itself when
# its child stops, and only it continues the child) and Ansible waiting on it.
registry_pid() {
    local p
    p=$(pidfile_pid "$RUN/registry.pid") || return 1
    tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null | grep -qF "docker-registry serve $RUN/registry.yml" || return 1
    echo "$p"
}

stop_registry() {
    # A paused registry takes no TERM until it runs again.
    # A pid file whose process is gone (it died, or a reboot) is only removed.
    local p
    if p=$(registry_pid); then kill -CONT "$p" 2> /dev/null || true; fi
    stop_pidfile "$RUN/registry.pid"
}

# The login registry: distribution's htpasswd auth (bcrypt, cost 4 so each request does not
# spend a quarter second hashing), over plain HTTP on loopback, which distribution 2.8 allows.
# Starts empty; `publish 127.0.0.1:5001/...` fills it.
start_login_registry() {
    local d=$RUN/login-registry pw
    mkdir -p "$d/data"
    pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    printf '%s' "$pw" > "$d/password"
    printf 'refit:%s\n' "$(python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$pw")" > "$d/htpasswd"
    printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$LOGIN_REGISTRY" "$(printf 'refit:%s' "$pw" | base64 -w0)" > "$d/auth.json"
    chmod 600 "$d/password" "$d/htpasswd" "$d/auth.json"
    cat > "$d/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}
http: {addr: $LOGIN_REGISTRY}
auth: {htpasswd: {realm: refit-testbed, path: $d/htpasswd}}
EOF
    (close_inherited_fds; exec docker-registry serve "$d/registry.yml") > "$d/registry.log" 2>&1 &
    write_pidfile "$RUN/login-registry.pid" $!
    for _ in $(seq 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$LOGIN_REGISTRY/v2/")" = 401 ] && return
        sleep 0.1
    done
    die "the login registry did not answer on $LOGIN_REGISTRY within 10 s; see $d/registry.log"
}

stop_login_registry() { stop_pidfile "$RUN/login-registry.pid"; }

# The TLS registry: distribution serving HTTPS with a certificate for 127.0.0.1 from a CA made
# once per bed under $RUN/tls-registry. Hosts trust that CA through
# /etc/containers/certs.d/$TLS_REGISTRY/ca.crt (boot_host) and no registries.conf entry, so a
# pull or a digest lookup that ignores certs.d fails. $RUN/tls-registry/certs.d is host podman's
# --cert-dir parent; `publish` pushes with --tls-verify=false. Starts empty.
start_tls_registry() {
    local d=$RUN/tls-registry ip=${TLS_REGISTRY%:*}
    command -v openssl > /dev/null || die "the TLS registry needs openssl for its certificates; run: apt-get install openssl"
    mkdir -p "$d/data" "$d/certs.d/$TLS_REGISTRY"
    if [ ! -s "$d/server.crt" ]; then
        openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
            -keyout "$d/ca.key" -out "$d/ca.crt" -subj "/CN=refit testbed CA $BED" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2> /dev/null
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout "$d/server.key" -out "$d/server.csr" -subj "/CN=$ip" 2> /dev/null
        printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$ip" > "$d/server.ext"
        openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 -sha256 \
            -extfile "$d/server.ext" -out "$d/server.crt" 2> /dev/null
        rm -f "$d/server.csr" "$d/server.ext" "$d/ca.srl"
        chmod 600 "$d/ca.key" "$d/server.key"
    fi
    cp "$d/ca.crt" "$d/certs.d/$TLS_REGISTRY/ca.crt"
    cat > "$d/registry.yml" <<EOF
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}
http: {addr: $TLS_REGISTRY, tls: {certificate: $d/server.crt, key: $d/server.key}}
EOF
    (close_inherited_fds; exec docker-registry serve "$d/registry.yml") > "$d/registry.log" 2>&1 &
    write_pidfile "$RUN/tls-registry.pid" $!
    for _ in $(seq 100); do
        curl -fs --cacert "$d/ca.crt" "https://$TLS_REGISTRY/v2/" > /dev/null && return
        sleep 0.1
    done
    die "the TLS registry did not answer on https://$TLS_REGISTRY within 10 s; see $d/registry.log"
}

stop_tls_registry() { stop_pidfile "$RUN/tls-registry.pid"; }
