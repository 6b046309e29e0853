#!/usr/bin/env bash
# ansible-test sanity on the collection as `ansible-galaxy collection build` ships it, installed
# into a scratch ansible_collections tree. The modules must be built first (make collection).
# Each sanity test gets its own venv under ~/.ansible/test; requirements come from PyPI.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${VENV:-/var/cache/refit-testbed/venv}
PY="$VENV/bin/python"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The shellcheck sanity test needs a program that ansible-test does not install.
command -v shellcheck > /dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck > /dev/null

# ansible-test bootstraps pip in each venv with a script from a host outside this network.
pip_version=$("$PY" - <<'PYEOF'
import re, ansible_test._internal.python_requirements as r
print(re.search(r"pip='([0-9.]+)'", open(r.__file__).read()).group(1))
PYEOF
)
mkdir -p ~/.ansible/test/cache
install -m 0644 "$REPO/tests/sanity/get_pip.py" ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"

"$VENV/bin/ansible-galaxy" collection build --force --output-path "$WORK" "$REPO" > /dev/null
"$VENV/bin/ansible-galaxy" collection install --force -p "$WORK/cols" "$WORK"/refit-containers-*.tar.gz > /dev/null 2>&1
cd "$WORK/cols/ansible_collections/refit/containers"
python_version=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$VENV/bin/ansible-test" sanity --local --python "$python_version" --requirements --color no "$@" 2>&1 |
    grep -Ev '^(Requirement already|Collecting|Downloading|Installing|Successfully|Processing|Looking in|Using cached|  Attempting uninstall|    Found existing|    Uninstalling|  Running setup)'
