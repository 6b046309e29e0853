# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The action of refit.containers.container_unit: its binary's kept copy, one round trip (plugin_utils/cached_binary.py)."""

from __future__ import annotations

from ansible_collections.refit.containers.plugins.plugin_utils.cached_binary import CachedBinaryAction


class ActionModule(CachedBinaryAction):
    """refit.containers.container_unit, run from the copy the host keeps."""
