# shellcheck shell=bash disable=SC2154
# Ansible's view of the bed: ansible.cfg, the inventory and ssh's settings. Sourced by
# tests/testbed/testbed.sh, whose settings these functions read.

write_ansible_config() {
    # The hosts share one network (Network=host): each needs ports of its own. The first two
    # keep the bases the examples and the benches were written for (tests at 18000/18100, the
    # deployment at 18200/18300); every later host gets a block of 200 above 20000.
    local i=0 port refit_port
    {
        echo "[testhosts]"
        for name in "$@"; do
            if [ $i -lt 2 ]; then
                port=$((18000 + 100 * i)) refit_port=$((18200 + 100 * i))
            else
                port=$((20000 + 200 * (i - 2))) refit_port=$((20100 + 200 * (i - 2)))
            fi
            echo "$name ansible_connection=refit_testhost refit_testhost_pid=$(leader_pid "$name") testbed_port_base=$port refit_port_base=$refit_port ansible_host=127.0.0.1 ansible_port=$(ssh_port "$name")"
            i=$((i + 1))
        done
        echo
        echo "[testhosts:vars]"
        # On an np* host this names nothing: a Python module fails there, as it should.
        echo "ansible_python_interpreter=/usr/bin/python3"
        echo "testbed_registry=$REGISTRY"
        echo "testbed_login_registry=$LOGIN_REGISTRY"
        echo "testbed_login_auth_file=$RUN/login-registry/auth.json"
        echo "testbed_tls_registry=$TLS_REGISTRY"
        # The bed's own directory on the controller: scenario files there never meet another
        # lane's (tests/testbed/lane.sh), as files under a fixed /var/tmp name would.
        echo "testbed_run=$RUN"
        echo "ansible_user=root"
        echo "ansible_ssh_private_key_file=$RUN/ssh/id_ed25519"
        echo "ansible_ssh_common_args='-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no'"
    } > "$RUN/inventory.ini"
    # The same hosts over real SSH: ANSIBLE_INVENTORY=$RUN/inventory-ssh.ini.
    sed 's/ ansible_connection=refit_testhost / ansible_connection=ssh /' "$RUN/inventory.ini" > "$RUN/inventory-ssh.ini"
    mkdir -p "$RUN/collections"
    cat > "$RUN/ansible.cfg" <<EOF
[defaults]
inventory = $RUN/inventory.ini
connection_plugins = $REPO/tests/ansible/connection_plugins
collections_path = $RUN/collections
host_key_checking = False
retry_files_enabled = False
interpreter_python = /usr/bin/python3
forks = 10
[ssh_connection]
# Every bed's hosts answer on the same 127.0.0.1 ports, each bed in its own network namespace:
# ssh's control sockets, by default under ~/.ansible/cp and named by host, port and user, would
# hand one bed's connection to another bed's run.
control_path_dir = $RUN/ssh-cp
EOF
}
