# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The controller's side of a detached module call: the shell that reads its run dir, and what it said.

A refit module call that lasts answers its round trip with a ticket (the run dir and the worker's
pid) and goes on working on the host (core/src/ansible/detach.rs). The action then runs
`poll_script` every POLL_EVERY seconds: one round trip, plain POSIX shell (a host without Python
runs it), that prints the events written since the last look, then whether the call is still at
work, finished (with its result) or gone (killed before it finished). This file imports nothing
of Ansible, so it is tested with plain Python.
"""

from __future__ import annotations

import json
import re
import shlex

# The key of the ticket (detach.rs DETACHED_KEY).
DETACHED_KEY = "_refit_detached"
# How often the action looks.
POLL_EVERY = 0.25
# A look that fails this many times in a row (the connection lost) ends the task.
POLL_FAILURES = 20
# Where the events end and the call's state begins, in what the host prints.
MARK = "refit: progress state "
# The progress callback's events file (its events_file option), which the callback puts in the
# environment of the task workers it forks: the action adds each progress event to it, beside
# the callback's result lines, so refitctl --json and a script tailing the file follow a step
# as it happens, as the screen does.
EVENTS_ENV = "REFIT_EVENTS_FILE"
# A run dir as detach.rs names it: STATE_DIR/runs/MODULE-PID.
_RUN_DIR = re.compile(r"^/(?:[^/\0]+/)*runs/[a-z_]+-[0-9]+$")

# `live` is locked by the worker while it lives: a lock taken at once means it is gone. A host
# without flock(1) asks whether the pid is there. The result is looked for again after the
# worker's end, since it writes its result and then exits.
_SCRIPT = r"""
d=%(dir)s; p=%(pid)s
if [ -f "$d/result" ]; then s=done
elif command -v flock > /dev/null 2>&1; then
  if flock -n "$d/live" true 2> /dev/null; then s=gone; else s=running; fi
elif kill -0 "$p" 2> /dev/null; then s=running
else s=gone
fi
if [ "$s" = gone ] && [ -f "$d/result" ]; then s=done; fi
tail -c +%(start)d "$d/events" 2> /dev/null
printf '\n%%s%%s\n' %(mark)s "$s"
if [ "$s" = done ]; then cat "$d/result"; fi
"""


def is_run_dir(path):
    """Whether `path` is a run dir as the module names them: the action removes it at the end."""
    return isinstance(path, str) and bool(_RUN_DIR.match(path)) and "/../" not in path


def poll_script(run_dir, pid, offset):
    """The command that prints the events of `run_dir` from byte `offset` on, and the call's
    state: a `/bin/sh -c` of its own, since a connection may append to the command it runs."""
    script = _SCRIPT % {
        "dir": shlex.quote(run_dir),
        "pid": int(pid),
        "start": int(offset) + 1,
        "mark": shlex.quote(MARK),
    }
    return "/bin/sh -c %s" % shlex.quote(script.strip())


def remove_script(run_dir):
    """The shell that removes a finished call's run dir."""
    return "rm -rf -- %s" % shlex.quote(run_dir)


def read_poll(stdout):
    """What a look said: (events, bytes of whole event lines read, state, result text or None).
    A result is the module's output, which Ansible's parser takes as it would any module's.

    State is "running", "done" or "gone"; None when the output is not a look's (the shell never
    ran). An event line still being written is left for the next look.
    """
    # A connection that gives the command a terminal (ssh -tt) turns each newline into CRLF.
    stdout = stdout.replace("\r\n", "\n")
    at = stdout.rfind("\n" + MARK)
    if at < 0:
        return [], 0, None, None
    head = stdout[:at]
    rest = stdout[at + 1 + len(MARK):]
    state, _sep, result = rest.partition("\n")
    whole = head[: head.rfind("\n") + 1]
    events = []
    for line in whole.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, len(whole.encode("utf-8")), state.strip(), result if state.strip() == "done" else None


def event_line(host, phase, event):
    """The line shown for one event, in the columns of the progress callback's lines."""
    return "%8s  %-8s %-9s %-22s %s" % ("", host, phase, "", event.get("line", ""))


def event_record(host, phase, action, event):
    """The events file's line for one progress event: the callback's result lines have a
    `status` and a `result`, a progress line a `progress` (the event as the host wrote it)."""
    return json.dumps({"host": host, "phase": phase, "action": action, "progress": event}) + "\n"


def record_events(path, host, phase, action, events):
    """Appends `events` to the events file at `path` as one write, so that the callback's
    lines, written from another process, never land inside one of them."""
    if not path or not events:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(event_record(host, phase, action, e) for e in events))


PHASE_TAG = "refit_phase_"


def phase_of(tags):
    """The flow phase of a task with these tags, from the refit_phase_NAME tag its phase's
    import_tasks gives it (roles/flow/tasks/phases.yml and work.yml), or "task" outside them."""
    for tag in tags or []:
        if tag.startswith(PHASE_TAG):
            return tag[len(PHASE_TAG):]
    return "task"
