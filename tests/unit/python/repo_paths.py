"""Loads a file of the checkout as a module, for the tests beside this one: the plugins live in
a collection's layout, and bench's scripts in a directory that is no package."""

import importlib.util
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def load(relpath, name):
    """The module at REPO/relpath, registered as `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
