"""tools/import_cycles.py, which `make check` runs on the crates: what it takes for an import
between the files of one module dir, and that it finds a circle among them, made on disk."""

import contextlib
import io
import tempfile
import unittest
from pathlib import Path

from repo_paths import load

cycles = load("tools/import_cycles.py", "refit_import_cycles")


def crate(files):
    """A crate's src dir in a temporary dir, with the given files (path -> text)."""
    tmp = tempfile.TemporaryDirectory()
    src = Path(tmp.name) / "src"
    for path, text in files.items():
        f = src / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp, src


class Circles(unittest.TestCase):
    def circles(self, files):
        tmp, src = crate(files)
        with tmp:
            return [(d.name, c) for d, c in cycles.circles(src)]

    def test_two_files_importing_each_other_are_a_circle(self):
        found = self.circles(
            {
                "lib.rs": "pub mod m;",
                "m/mod.rs": "mod a;\nmod b;",
                "m/a.rs": "use super::b::B;\npub struct A;",
                "m/b.rs": "use super::a::A;\npub struct B;",
            }
        )
        self.assertEqual(found, [("m", ["a", "b", "a"])])

    def test_a_chain_is_no_circle(self):
        found = self.circles(
            {
                "m/mod.rs": "mod a;\nmod b;\nmod c;",
                "m/a.rs": "use super::{b::B, c};",
                "m/b.rs": "use super::c::C;",
                "m/c.rs": "pub struct C;",
            }
        )
        self.assertEqual(found, [])

    def test_a_name_mod_rs_re_exports_is_an_import_of_its_file(self):
        found = self.circles(
            {
                "m/mod.rs": "mod a;\nmod error;\npub use error::{Error, Other as O};",
                "m/a.rs": "pub struct A;\nfn f() -> super::O { todo!() }",
                "m/error.rs": "use super::a::A;\npub struct Error;\npub struct Other;",
            }
        )
        self.assertEqual(found, [("m", ["a", "error", "a"])])

    def test_a_crate_path_and_a_grouped_import_count(self):
        found = self.circles(
            {
                "m/mod.rs": "mod a;\nmod b;",
                "m/a.rs": "use crate::m::b;",
                "m/b.rs": "use super::{\n    x::Y,\n    a::{A, B},\n};",
            }
        )
        self.assertEqual(found, [("m", ["a", "b", "a"])])

    def test_comments_and_inline_test_modules_are_not_imports(self):
        found = self.circles(
            {
                "m/mod.rs": "mod a;\nmod b;",
                "m/a.rs": "use super::b::B;",
                "m/b.rs": "// see super::a::A\n#[cfg(test)]\nmod tests {\n    use super::a;\n}",
            }
        )
        self.assertEqual(found, [])

    def test_the_parent_mod_rs_is_not_one_of_the_files(self):
        found = self.circles(
            {
                "m/mod.rs": "mod a;\nuse a::A;\npub struct Settings;",
                "m/a.rs": "use super::Settings;\npub struct A;",
            }
        )
        self.assertEqual(found, [])

    def test_main_fails_naming_the_circle(self):
        tmp, src = crate({"m/a.rs": "use super::b;", "m/b.rs": "use super::a;"})
        err = io.StringIO()
        with tmp, contextlib.redirect_stderr(err):
            self.assertEqual(cycles.main([str(src)]), 1)
        self.assertIn("m: a -> b -> a", err.getvalue())
        tmp, src = crate({"m/a.rs": "use super::b;", "m/b.rs": ""})
        with tmp:
            self.assertEqual(cycles.main([str(src)]), 0)


if __name__ == "__main__":
    unittest.main()
