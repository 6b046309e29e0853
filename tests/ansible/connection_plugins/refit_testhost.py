# Runs tasks inside a refit testbed host (a systemd-nspawn guest) by nsenter'ing into the
# namespaces of its init, and copies files through /proc/PID/root: no sshd, no network.
from __future__ import annotations

DOCUMENTATION = """
    name: refit_testhost
    short_description: run inside a refit testbed host through nsenter
    description:
        - Like the local connection, but every command runs under C(nsenter -t PID -a), after
          joining the guest's init.scope cgroup, and files move through C(/proc/PID/root).
    author: refit developers
    options:
        refit_testhost_pid:
            type: int
            required: true
            description: PID, on the controller, of the test host's init.
            vars:
                - name: refit_testhost_pid
        become_success_timeout:
            type: int
            default: 10
            description: see the local connection plugin
            vars:
                - name: ansible_local_become_success_timeout
        become_strip_preamble:
            type: bool
            default: true
            description: see the local connection plugin
            vars:
                - name: ansible_local_become_strip_preamble
    extends_documentation_fragment:
        - connection_pipelining
"""

import os
import shlex
import shutil

from ansible.plugins.connection.local import Connection as LocalConnection


class Connection(LocalConnection):
    transport = "refit_testhost"
    has_pipelining = True

    def _pid(self) -> int:
        return int(self.get_option("refit_testhost_pid"))

    def _root(self, path: str) -> str:
        return "/proc/%d/root%s" % (self._pid(), path)

    def exec_command(self, cmd, in_data=None, sudoable=True):
        pid = self._pid()
        # A process left in the controller's root cgroup cannot be moved into the guest's
        # cgroups later, which breaks `podman exec`; so join the guest's init.scope first.
        prefix = (
            'echo $$ > "/sys/fs/cgroup/unified$(sed -n \'s/^0:://p\' /proc/%d/cgroup)/cgroup.procs" && '
            "exec nsenter -t %d -a -- " % (pid, pid)
        )
        if isinstance(cmd, bytes):
            cmd = cmd.decode()
        if not isinstance(cmd, str):
            cmd = " ".join(shlex.quote(c) for c in cmd)
        # The whole command line runs in the guest's shell: a `raw` task's `a; b` or `for ...`
        # would otherwise run its first command in the guest and the rest on the controller.
        return super().exec_command(prefix + "/bin/sh -c " + shlex.quote(cmd), in_data=in_data, sudoable=sudoable)

    # No unfrackpath() here: it would resolve the /proc/PID/root magic link back to "/".
    def put_file(self, in_path, out_path):
        self._connect()
        shutil.copyfile(in_path, self._root(out_path))

    def fetch_file(self, in_path, out_path):
        self._connect()
        os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
        shutil.copyfile(self._root(in_path), out_path)
