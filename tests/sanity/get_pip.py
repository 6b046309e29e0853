"""Stands in for the get-pip.py script ansible-test downloads from a host this network cannot
reach. Like get-pip.py, `python get_pip.py ARGS` installs pip and then what ARGS name (ansible-test
passes `pip==VERSION` and options): pip comes from the interpreter's bundled wheel (ensurepip),
everything else from the package index pip is configured for.
"""
import ensurepip
import os
import subprocess
import sys


def main():
    ensurepip.bootstrap(upgrade=True)
    # ensurepip points PIP_CONFIG_FILE at /dev/null for itself; the install must see the
    # machine's pip configuration (its index, its CA bundle) again.
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONFIG_FILE"}
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    subprocess.run([sys.executable, "-m", "pip", "install"] + args, check=True, env=env)


if __name__ == "__main__":
    main()
