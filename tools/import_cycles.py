#!/usr/bin/env python3
"""Fails on a circle of imports among the files of one Rust module directory.

    tools/import_cycles.py core/src [more crate src dirs]

A file of a module dir imports a sibling through `super::x`, `super::{x::…}` or
`crate::path::to::dir::x`; a name the dir's mod.rs re-exports (`pub use error::UnitError`) counts
as an import of the file that defines it. The dir's mod.rs itself is left out: it is the parent
that declares the files, not one of them. A circle means no file of it can be read, tested or
moved without the others, which is why `make check` runs this. None is tolerated.
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(text):
    """The source without line comments (doc comments name modules in prose) and without
    inline modules (`mod tests { use super::*; }`), whose `super` is the file itself."""
    text = re.sub(r"//[^\n]*", "", text)
    while True:
        m = re.search(r"\bmod\s+" + IDENT + r"\s*\{", text)
        if not m:
            return text
        body = balanced(text, m.end() - 1)
        end = m.end() + (len(body) + 1 if body is not None else 0)
        text = text[: m.start()] + text[end:]


def group_heads(body):
    """The first identifier of each top-level item of a `{…}` use group."""
    heads, depth, item = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            heads.append(item)
            item = ""
        else:
            item += ch
    heads.append(item)
    out = []
    for h in heads:
        m = re.match(r"\s*(" + IDENT + ")", h)
        if m:
            out.append(m.group(1))
    return out


def group_leaves(body):
    """The names a `{…}` use group brings in (the last segment of each item, or its alias)."""
    names = []
    for item in re.split(r"[{},]", body):
        item = item.strip()
        if not item or item.endswith("::"):
            continue
        alias = re.search(r"\bas\s+(" + IDENT + r")$", item)
        names.append(alias.group(1) if alias else item.split("::")[-1].strip())
    return names


def balanced(text, start):
    """The text inside the braces opening at `start`, or None if they never close."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return None


def referenced(text, prefix):
    """Every first identifier after `prefix` (`super::`, `crate::a::b::`), single or grouped."""
    found = []
    for m in re.finditer(re.escape(prefix), text):
        rest = m.end()
        if rest < len(text) and text[rest] == "{":
            body = balanced(text, rest)
            if body is not None:
                found.extend(group_heads(body))
            continue
        name = re.match(IDENT, text[rest:])
        if name:
            found.append(name.group(0))
    return found


def reexports(mod_text, siblings):
    """Name -> sibling file, for the names the module's mod.rs brings in from its files."""
    out = {}
    text = strip_comments(mod_text)
    for m in re.finditer(r"\buse\s+(?:self::)?(" + IDENT + r")::", text):
        owner = m.group(1)
        if owner not in siblings:
            continue
        end = text.index(";", m.end())
        tail = text[m.end() : end]
        if tail.startswith("{"):
            names = group_leaves(tail)
        else:
            alias = re.search(r"\bas\s+(" + IDENT + r")\s*$", tail)
            names = [alias.group(1) if alias else tail.split("::")[-1].strip()]
        for n in names:
            if n and n != "self":
                out[n] = owner
    return out


def module_dirs(src):
    """Each dir under the crate's src that holds module files, with its `crate::` path."""
    for d in sorted(p for p in src.rglob("*") if p.is_dir()):
        if not any(d.glob("*.rs")):
            continue
        yield d, "::".join(d.relative_to(src).parts)


def siblings_of(d):
    """The dir's module files by name: `x.rs`, or `x/mod.rs` for a module dir of its own."""
    out = {}
    for f in d.glob("*.rs"):
        if f.stem != "mod":
            out[f.stem] = f
    for sub in d.iterdir():
        if sub.is_dir() and (sub / "mod.rs").is_file() and sub.name not in out:
            out[sub.name] = sub / "mod.rs"
    return out


def edges(d, path):
    """File name -> the sibling files it imports."""
    sibs = siblings_of(d)
    parent = d / "mod.rs"
    if not parent.is_file():
        parent = d.with_suffix(".rs")
    names = reexports(parent.read_text(), sibs) if parent.is_file() else {}
    graph = {}
    for name, f in sibs.items():
        text = strip_comments(f.read_text())
        refs = referenced(text, "super::") + referenced(text, "crate::" + path + "::")
        targets = set()
        for r in refs:
            owner = r if r in sibs else names.get(r)
            if owner and owner != name:
                targets.add(owner)
        graph[name] = sorted(targets)
    return graph


def find_circle(graph):
    """One circle of the graph as a list of names (first == last), or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == "open":
                return stack[stack.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = "done"
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def circles(src):
    """(dir, circle) for every module dir of a crate's src that has one."""
    out = []
    for d, path in module_dirs(src):
        circle = find_circle(edges(d, path))
        if circle:
            out.append((d, circle))
    return out


def main(argv):
    srcs = list(argv)
    if not srcs:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = False
    for src in srcs:
        for d, circle in circles(Path(src)):
            failed = True
            print(
                f"circle of imports among the files of {d}: {' -> '.join(circle)}. Move what"
                " they share into a file both import, or have one take what it needs as an"
                " argument.",
                file=sys.stderr,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
