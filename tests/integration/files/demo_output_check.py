"""Checks the demo's output (examples/demo/steps.sh) against the host's own record of events.

usage: demo_output_check.py OUTPUT JOURNAL PODMAN

OUTPUT holds the demo's lines, each prefixed with the controller's clock as it arrived
(`<unix seconds> <line>`). JOURNAL holds systemd's "Started UNIT" entries of the run
(`journalctl -o json MESSAGE_ID=...`), PODMAN podman's container events (`podman events
--format json`). The test hosts share the controller's clock.

It fails (exit 1, naming each miss) unless:
- every phase of every refitctl run that lasts over 2 s shows a progress line inside it, and no
  phase goes more than 5 s without a line;
- each progress line that reports an event the host records arrived within 1 s of it: systemd's
  start of a unit, podman's first passed health check of its container, podman's start of a
  migration container; a migration's end within 2 s of its container's exit (refit learns it
  when podman's wait answers, after podman's cleanup, which lags the exit on a loaded host).
"""
import json
import re
import sys
from dataclasses import dataclass, field

ANSI = re.compile(r"\x1b\[[0-9;]*m")
RUN_BEGIN = re.compile(r"^refit: (.*)$")
RUN_END = re.compile(r"^took [0-9.]+ s$")
# The callback's lines: an elapsed time, then host, phase, subject, text; a phase begins on a
# line whose host column is `*`. The action's progress lines leave the elapsed column blank.
PHASE_BEGIN = re.compile(r"^\s*[0-9.]+s\s+\*\s+(\S+)\s")
PROGRESS = re.compile(r"^ {10}(\S+)\s+(\S+)\s+(.*)$")
PHASE_MIN_S = 2.0
GAP_MAX_S = 5.0

# A progress line's text, the kind of host event it reports, and how late it may arrive.
REPORTS = [
    (re.compile(r"^(\S+\.service) started$"), "started", 1.0),
    (re.compile(r"^(\S+\.service) healthy$"), "healthy", 1.0),
    (re.compile(r"^migrating (\S+)$"), "migration_start", 1.0),
    (re.compile(r"^migrating (\S+): done in "), "migration_end", 2.0),
]


@dataclass
class Phase:
    run: str
    name: str
    begin: float
    end: float = 0.0
    lines: list = field(default_factory=list)


@dataclass
class Progress:
    at: float
    text: str


def read_output(path):
    """The phases of every run in the output, each with the progress lines that came in it."""
    phases, progress, run, current = [], [], "", None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            stamp, line = raw.rstrip("\n").split(" ", 1) if " " in raw else (raw.strip(), "")
            at, line = float(stamp), ANSI.sub("", line)
            if m := RUN_BEGIN.match(line):
                run = m.group(1)
            elif m := PHASE_BEGIN.match(line):
                if current:
                    current.end = at
                current = Phase(run, m.group(1), at)
                phases.append(current)
            elif RUN_END.match(line) and current:
                current.end, current = at, None
            if current:
                current.lines.append(at)
            if m := PROGRESS.match(line):
                progress.append(Progress(at, m.group(3).strip()))
    return phases, progress


def read_host_events(journal_path, podman_path):
    """Host times (unix seconds) of each kind of event, per subject (a unit or a migration)."""
    events = {}

    def add(kind, subject, at):
        events.setdefault((kind, subject), []).append(at)

    with open(journal_path, encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line) if line.strip() else {}
            # A user manager's starts carry USER_UNIT instead: not the demo's services.
            if "UNIT" in entry:
                add("started", entry["UNIT"], int(entry["__REALTIME_TIMESTAMP"]) / 1e6)
    with open(podman_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            ev = json.loads(line)
            attrs = ev.get("Attributes") or {}
            at = int(ev["timeNano"]) / 1e9
            if migration := attrs.get("io.refit.migration"):
                name = migration.removesuffix(".service")
                if ev["Status"] == "start":
                    add("migration_start", name, at)
                elif ev["Status"] == "died":
                    add("migration_end", name, at)
            elif ev["Status"] == "health_status" and ev.get("health_status") == "healthy":
                unit = attrs.get("PODMAN_SYSTEMD_UNIT")
                if unit:
                    add("healthy", unit, at)
    return events


def check(phases, progress, events):
    """The misses, as lines; and what was checked, as counts."""
    misses, counted = [], {"phases": 0, "long_phases": 0, "paired": 0, "latest_s": {}}
    for p in phases:
        counted["phases"] += 1
        if p.end - p.begin <= PHASE_MIN_S:
            continue
        counted["long_phases"] += 1
        inside = [x for x in progress if p.begin < x.at <= p.end]
        if not inside:
            misses.append(f"{p.run}: phase {p.name} lasted {p.end - p.begin:.1f} s with no progress line")
        stamps = [p.begin] + p.lines + [p.end]
        gap = max(b - a for a, b in zip(stamps, stamps[1:]))
        if gap > GAP_MAX_S:
            misses.append(f"{p.run}: phase {p.name} went {gap:.1f} s without a line")
    for x in progress:
        for pattern, kind, within in REPORTS:
            m = pattern.match(x.text)
            if not m:
                continue
            times = events.get((kind, m.group(1)), [])
            if not times:
                misses.append(f"'{x.text}' at {x.at:.3f}: the host recorded no {kind} of {m.group(1)}")
                continue
            nearest = min(times, key=lambda t: abs(x.at - t))
            counted["paired"] += 1
            late = round(x.at - nearest, 3)
            counted["latest_s"][kind] = max(late, counted["latest_s"].get(kind, late))
            if abs(x.at - nearest) > within:
                misses.append(
                    f"'{x.text}' arrived at {x.at:.3f}, {x.at - nearest:+.2f} s from the host's "
                    f"{kind} at {nearest:.3f} (allowed {within} s)"
                )
    return misses, counted


def main():
    output, journal, podman = sys.argv[1:4]
    phases, progress = read_output(output)
    misses, counted = check(phases, progress, read_host_events(journal, podman))
    # A check that found nothing to check has checked nothing: the demo must show its phases,
    # long ones among them, and events to pair.
    if not counted["long_phases"] or not counted["paired"]:
        misses.append(f"nothing to check: {counted}")
    print(json.dumps({"checked": counted, "misses": misses}, indent=1))
    sys.exit(1 if misses else 0)


if __name__ == "__main__":
    main()
