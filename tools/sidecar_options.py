#!/usr/bin/env python3
"""Writes the `options:` of each module's sidecar docs (plugins/modules/NAME.yml) from the
module's own spec, as `NAME --doc` prints it; the rest of the sidecar (prose, EXAMPLES,
RETURN) is left as it is. Usage: tools/sidecar_options.py BIN_DIR [NAME...]"""

import pathlib
import subprocess
import sys

MODULES = ["container_unit", "stop_services", "run_migrations", "flow_state", "data_step"]
ROOT = pathlib.Path(__file__).resolve().parent.parent


def splice(text, options):
    """The sidecar with its DOCUMENTATION's options block replaced by `options`."""
    lines = text.splitlines(keepends=True)
    start = lines.index("  options:\n")
    end = start + 1
    # The block runs to the next key of DOCUMENTATION (two spaces in) or the next document key.
    while end < len(lines) and (lines[end].startswith("   ") or not lines[end].strip()):
        end += 1
    return "".join(lines[:start]) + options + "".join(lines[end:])


def main():
    bin_dir = pathlib.Path(sys.argv[1])
    for name in sys.argv[2:] or MODULES:
        options = subprocess.run(
            [str(bin_dir / name), "--doc"], check=True, capture_output=True, text=True
        ).stdout
        path = ROOT / "plugins" / "modules" / (name + ".yml")
        old = path.read_text(encoding="utf-8")
        new = splice(old, options)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print("wrote the options of %s" % path.relative_to(ROOT))


if __name__ == "__main__":
    main()
