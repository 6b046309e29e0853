# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""Runs refit's module binaries from a copy the host keeps, named by the binary's hash.

Ansible runs a binary module in six round trips: a temporary directory made, the binary (about
5 MB) and its arguments copied, the binary made executable, run, and the directory removed.
refit's modules run on every host of a fleet in every run, and most runs change nothing, so
here a call is one round trip: the arguments go on standard input to the copy the host keeps.

When the host has no copy (the first run of a release there), Ansible's own path runs the
module, which then keeps a copy of itself (not in check mode). A copy is only ever used under
the name of its own SHA-256, and only when nobody but the user it runs as could have put it there
(plugin_utils/kept_copy.py), so a new release never runs an old binary, nor anyone a planted one. Without pipelining
(`become` with a method or setting that cannot pass standard input), Ansible's own path runs
every call, and so does every call of a play that sets `refit_kept_modules: false`.

A call that lasts (a pull, a migration, a health wait) detaches on the host after a moment and
answers with a ticket; the action then shows its progress as it comes, one line per event, and
takes its result from the host when it is there (plugin_utils/progress_poll.py). A play that
sets `refit_progress: false` runs every call attached, as a plain module, and shows nothing
until it returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import time

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

try:  # ansible-core 2.19 and newer: module arguments and results pass through a profile
    from ansible.module_utils.common.json import Direction, get_module_decoder, get_module_encoder
except ImportError:  # older cores: plain JSON
    Direction = get_module_decoder = get_module_encoder = None

from ansible_collections.refit.containers.plugins.plugin_utils import progress_poll
from ansible_collections.refit.containers.plugins.plugin_utils.kept_copy import answer, kept_script

display = Display()

# Binary modules' serialization profile on ansible-core 2.19.
PROFILE = "legacy"


# Each binary's SHA-256 by path, with the stat of the version hashed. Ansible's strategy loads
# an action's class in ansible-playbook's main process before it forks a worker for each host
# (CachedBinaryAction.__init_subclass__ hashes the action's binary then), so every worker
# starts with the digest: hashing 5 MB in each of them cost each host 6 ms of the controller's
# CPU for a name that changes only with the binary.
_DIGESTS = {}


def _version(path):
    """What tells one version of a file from another: an edit in place changes its ctime."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def binary_digest(path):
    """The binary's SHA-256, the name its copy is kept under."""
    before = _version(path)
    known = _DIGESTS.get(path)
    if known is not None and known[0] == before:
        return known[1]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    # A binary rebuilt while it was read is hashed again by the next call.
    if _version(path) == before:
        _DIGESTS[path] = (before, digest)
    return digest


def _own_binary(action_module):
    """plugins/modules/NAME for the action plugin module plugins/action/NAME.py, when it exists."""
    action_file = getattr(sys.modules.get(action_module), "__file__", None)
    if not action_file:
        return None
    plugins = os.path.dirname(os.path.dirname(action_file))
    path = os.path.join(plugins, "modules", os.path.splitext(os.path.basename(action_file))[0])
    return path if os.path.isfile(path) else None


class CachedBinaryAction(ActionBase):
    """The action of each refit module: the kept copy when the host has it, else Ansible's path."""

    _supports_check_mode = True
    _supports_async = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Run where the class is defined: in the main process, before the workers fork.
        path = _own_binary(cls.__module__)
        if path:
            try:
                binary_digest(path)
            except OSError:
                pass  # each call hashes it then, and fails there if it still cannot

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # no longer has any effect
        task_vars = task_vars or {}
        module = self._task.resolved_action or self._task.action
        path = self._module_path(module)
        kept_as = "%s-%s" % (os.path.basename(path), binary_digest(path))
        wanted = boolean(task_vars.get("refit_kept_modules", True), strict=False)
        progress = boolean(task_vars.get("refit_progress", True), strict=False)
        args = dict(self._task.args, _refit_progress=progress)
        data = self._run_kept(module, args, kept_as, task_vars) if wanted and self._can_pipe() else None
        if data is None:
            args["_refit_keep_as"] = kept_as
            data = self._execute_module(module_name=module, module_args=args, task_vars=task_vars)
            data = self._follow(data, task_vars)
            # After the call's end: a detached worker's args file is in it (kill_in_phase.sh reads it).
            self._remove_tmp_path(self._connection._shell.tmpdir)
        else:
            data = self._follow(data, task_vars)
        return merge_hash(result, data)

    def _follow(self, data, task_vars):
        """The result of a call: `data` itself, or, when the call detached, the result it leaves
        in its run dir, with each progress event shown as it comes."""
        ticket = data.get(progress_poll.DETACHED_KEY) if isinstance(data, dict) else None
        if not isinstance(ticket, dict) or not progress_poll.is_run_dir(ticket.get("dir")):
            return data
        run_dir, pid = ticket["dir"], ticket.get("pid", 0)
        host = task_vars.get("inventory_hostname", "?")
        phase = progress_poll.phase_of(self._task.tags)
        action = self._task.resolved_action or self._task.action
        events_file = os.environ.get(progress_poll.EVENTS_ENV)
        offset, failures = 0, 0
        while True:
            time.sleep(progress_poll.POLL_EVERY)
            res = self._low_level_execute_command(progress_poll.poll_script(run_dir, pid, offset), sudoable=True)
            events, read, state, text = progress_poll.read_poll(res.get("stdout", ""))
            if state is None:
                failures += 1
                if failures < progress_poll.POLL_FAILURES:
                    continue
                return {
                    "failed": True,
                    "msg": "lost the host while following the call: %s; the module may still be at work there, in %s: "
                    "wait for refit's lock to be free, then run the task again" % (res.get("stderr", "").strip(), run_dir),
                }
            failures = 0
            offset += read
            for event in events:
                display.display(progress_poll.event_line(host, phase, event))
            try:
                progress_poll.record_events(events_file, host, phase, action, events)
            except OSError as e:
                display.warning("refit: cannot add progress to the events file %s: %s; it goes on the screen alone" % (events_file, e))
                events_file = None
            if state == "running":
                continue
            self._low_level_execute_command(progress_poll.remove_script(run_dir), sudoable=True)
            if state == "gone":
                return {
                    "failed": True,
                    "msg": "the module's process on the host (pid %s) ended without a result: it was killed; "
                    "run the task again, which resumes" % pid,
                }
            return self._parse_result({"rc": 0, "stdout": text, "stderr": ""})

    def _parse_result(self, res):
        if get_module_decoder:
            data = self._parse_returned_data(res, PROFILE)
        else:
            data = self._parse_returned_data(res)
        remove_internal_keys(data)
        return data

    def _module_path(self, module):
        found = self._shared_loader_obj.module_loader.find_plugin_with_context(
            module, collection_list=self._task.collections
        )
        return found.plugin_resolved_path

    def _can_pipe(self):
        """Whether the arguments can go on standard input, as Ansible's pipelining sends them."""
        if not self._connection.has_pipelining or self._connection._shell.SHELL_FAMILY != "sh":
            return False
        # sudo with requiretty, or su, cannot take standard input: Ansible's own setting says.
        return not self._connection.become or self._is_pipelining_enabled("new")

    def _run_kept(self, module, args, kept_as, task_vars):
        """The result of the kept copy, or None when the host has none or its shell never ran."""
        args = dict(args)
        self._update_module_args(module, args, task_vars)
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE) if get_module_encoder else None
        binary, digest = kept_as.rsplit("-", 1)
        script = kept_script(binary, digest)
        cmd = ("%s /bin/sh -c %s" % (self._compute_environment_string(), shlex.quote(script))).strip()
        res = self._low_level_execute_command(cmd, sudoable=True, in_data=json.dumps(args, cls=encoder).encode())
        # A host whose shell never ran (gone, or refusing the login) takes Ansible's own path,
        # which tells unreachable from failed as for any module.
        said, rest = answer(res.get("stdout", ""))
        if said == "refused":
            display.v("refit: %s: the kept copy %s; Ansible's own path runs %s" % (self._play_context.remote_addr, rest, module))
        if said != "ran":
            return None
        res["stdout"] = rest
        return self._parse_result(res)
