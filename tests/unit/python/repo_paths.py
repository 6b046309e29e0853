"""Loads a file of the checkout as a module, for the tests beside this one: the plugins live in
a collection's layout, and bench's scripts in a directory that is no package."""

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _collection_on_path():
    """The checkout importable as ansible_collections.refit.containers, as the plugins import
    each other: a link in a scratch dir (one inside the repo would loop its tools)."""
    scratch = tempfile.mkdtemp(prefix="refit-unit-")
    atexit.register(shutil.rmtree, scratch, True)
    os.makedirs(os.path.join(scratch, "ansible_collections", "refit"))
    os.symlink(REPO, os.path.join(scratch, "ansible_collections", "refit", "containers"))
    sys.path.insert(0, scratch)


_collection_on_path()
# bench's scripts import their helpers (bench/benchlib.py) from beside them, as when run.
sys.path.insert(0, os.path.join(REPO, "bench"))


def load(relpath, name):
    """The module at REPO/relpath, registered as `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
