# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The action of refit.containers.data_step: its binary's kept copy, one round trip (plugin_utils/cached_binary.py)."""

from __future__ import annotations

from ansible_collections.refit.containers.plugins.plugin_utils.cached_binary import CachedBinaryAction


class ActionModule(CachedBinaryAction):
    """refit.containers.data_step, run from the copy the host keeps."""
