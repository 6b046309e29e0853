# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The host's side of a kept module copy: the shell snippet that runs it, and what it answered.

A copy runs as whoever runs the modules (root, as a rule), so the snippet runs it only when
nobody else could have put it there or changed it: a regular file, not a symlink, whose file and
dir are owned by the user the snippet runs as and writable by nobody else, and whose SHA-256 is
the one its name says. Anything else takes Ansible's own path, which keeps a fresh copy, and the
reason is shown at -v. This file imports nothing of Ansible, so it is tested with plain Python.
"""

from __future__ import annotations

import shlex

# Where the host keeps the copies: root's, made 0700 by the module (core/src/ansible/keep.rs).
CACHE_DIR = "/var/cache/refit/modules"
# What the host's shell says first, so a call that never reached it is told from a module's.
STARTED = "refit: kept copy lookup"
# What the host answers when it has no copy of this binary.
NOT_KEPT = "refit: no kept copy of this module"
# What it answers, with the reason, when it has one it will not run.
REFUSED = "refit: kept copy not run: "

# The checks, in order; each prints the reason it refuses and ends the snippet. `test -O` (owned
# by the effective user) is a builtin of dash, bash and BusyBox's sh, and `find -perm /022` (any
# of group or other write) is POSIX enough for GNU and BusyBox find: the snippet starts one
# process besides the module and its hash, as every module call on every host pays for it.
# Owner and mode hold for the file and its dir, so nobody but the owner can swap the file
# between the checks and the exec.
_CHECKS = r"""
m=%(path)s; d=%(dir)s; h=%(digest)s
if [ ! -e "$m" ] && [ ! -L "$m" ]; then echo %(not_kept)s; exit 0; fi
why=
if [ -L "$m" ]; then why="it is a symlink"
elif [ ! -f "$m" ]; then why="it is not a regular file"
elif [ ! -x "$m" ]; then why="it is not executable"
elif [ ! -O "$d" ] || [ ! -O "$m" ]; then
  why="it or its dir is not owned by the user the module runs as"
elif [ -n "$(find "$d" "$m" -maxdepth 0 -perm /022 -print 2>&1)" ]; then
  why="it or its dir is writable by others"
elif [ "$(sha256sum < "$m" 2>&1)" != "$h  -" ]; then why="its SHA-256 is not the one its name says"
else exec "$m" -
fi
echo %(refused)s"$m: $why"
"""


def kept_script(module_file, digest, cache_dir=CACHE_DIR):
    """The snippet the host runs: the kept copy of `module_file` (hashing to `digest`), or why not."""
    path = "%s/%s-%s" % (cache_dir, module_file, digest)
    return ("echo %s" % shlex.quote(STARTED)) + _CHECKS % {
        "path": shlex.quote(path),
        "dir": shlex.quote(cache_dir),
        "digest": shlex.quote(digest),
        "not_kept": shlex.quote(NOT_KEPT),
        "refused": shlex.quote(REFUSED),
    }


def answer(stdout):
    """What the host said: ('unreached', None), ('not_kept', None), ('refused', reason) or
    ('ran', the module's output)."""
    if not stdout.startswith(STARTED):
        return "unreached", None
    rest = stdout[len(STARTED):].lstrip("\r\n")
    line = rest.strip()
    if line == NOT_KEPT:
        return "not_kept", None
    if line.startswith(REFUSED) and "\n" not in line:
        return "refused", line[len(REFUSED):]
    return "ran", rest
