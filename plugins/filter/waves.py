# Copyright: refit contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet's waves: which hosts a flow's play takes, and in what batches.

The flow playbooks (playbooks/flow_play.yml) call these filters from their play header, so
that no `hosts:` or `serial:` expression holds arithmetic, and what a canary wave means is
decided here, under test (tests/unit/python/test_waves.py).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_COUNT = re.compile(r"^[0-9]*$")
_SERIAL_ITEM = re.compile(r"^[1-9][0-9]*%?$")


def _canary_text(canary):
    return "" if canary is None else str(canary).strip()


def is_count(canary):
    """True when refit_canary_hosts counts the first hosts (or is empty), not a pattern."""
    return bool(_COUNT.match(_canary_text(canary)))


def play_hosts(canary, hosts="all"):
    """The play's host pattern: a canary pattern's hosts go first, then `hosts`."""
    text = _canary_text(canary)
    if is_count(text):
        return hosts
    return "%s:%s" % (text, hosts)


def canary_count(canary, matched=()):
    """How many hosts the canary wave takes: 0 for none, else at least 1.

    `matched` is what the inventory answered for a pattern (ignored for a count). A canary of
    no host would roll every host at once, so it stops the run, naming the variable.
    """
    text = _canary_text(canary)
    if text == "":
        return 0
    count = int(text) if is_count(text) else len(list(matched or ()))
    if count < 1:
        raise AnsibleFilterError(
            "refit_canary_hosts %r matches no host: give a count of 1 or more, or a pattern "
            "that names hosts of the inventory" % text
        )
    return count


def _serial_items(serial):
    items = serial if isinstance(serial, (list, tuple)) else [serial]
    out = []
    for item in items:
        text = str(item).strip()
        if not _SERIAL_ITEM.match(text):
            raise AnsibleFilterError(
                "refit_serial %r is not a batch size: give N, N%% or a list of them, "
                "each above 0" % (serial,)
            )
        out.append(int(text) if text.isdigit() else text)
    return out


def serial_waves(serial, canary="", matched=()):
    """The play's `serial`: the canary wave first (when there is one), then the serial batches."""
    if serial is None or serial == "":
        serial = "100%"
    items = _serial_items(serial)
    count = canary_count(canary, matched)
    if count == 0:
        return items if isinstance(serial, (list, tuple)) else items[0]
    return [count] + items


def canaries(play_hosts_all, canary="", matched=()):
    """The hosts of the canary wave: the first of the play's, as many as it takes."""
    return list(play_hosts_all or ())[: canary_count(canary, matched)]


class FilterModule:
    def filters(self):
        return {
            "play_hosts": play_hosts,
            "serial_waves": serial_waves,
            "canaries": canaries,
        }
