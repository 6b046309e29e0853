//! A unit's drop-ins, as quadlet finds and merges them: `*.conf` files in the unit's own
//! `NAME.KIND.d/`, its template's `BASE@.KIND.d/` (for an instance file), every dashed prefix's
//! `PREFIX-.KIND.d/` (longest first), and the top-level `KIND.d/`. A file name in a nearer
//! directory hides the same name further out; the files apply in name order. quadlet merges
//! them into the unit before it generates the service, so they are part of the unit's
//! revision: a changed drop-in restarts the unit.

use super::file::UnitFile;
use super::revision::{canonical_text, hex, revision};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The drop-in refit itself writes in an `.image` unit's own directory while it holds a
/// rollback (`container_unit::image_hold`). It is refit's, not the unit's: it is no part of any
/// revision, so writing and lifting it restarts nothing.
pub const ROLLBACK_HOLD: &str = "zz-refit-rollback-hold.conf";

/// One drop-in file that applies to the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIn {
    /// The directory it is in, relative to the quadlet dir (`app.container.d`).
    pub dir: String,
    /// Its file name (`10-limits.conf`).
    pub name: String,
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the drop-in {path}: {source}; make it readable, or remove it")]
pub struct DropInError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The drop-in directories of `file_name` (`app-web.container`), nearest first.
pub fn dirs(file_name: &str) -> Vec<String> {
    let Some((stem, kind)) = file_name.rsplit_once('.') else {
        return Vec::new();
    };
    let mut out = vec![format!("{file_name}.d")];
    let base = match stem.split_once('@') {
        Some((base, inst)) if !inst.is_empty() => {
            out.push(format!("{base}@.{kind}.d"));
            base
        }
        _ => stem.trim_end_matches('@'),
    };
    let dashes: Vec<usize> = base.match_indices('-').map(|(i, _)| i).collect();
    for &i in dashes.iter().rev() {
        out.push(format!("{}-.{kind}.d", &base[..i]));
    }
    out.push(format!("{kind}.d"));
    out
}

/// The drop-ins that apply to `file_name` in `quadlet_dir`, in the order quadlet applies them.
pub fn read(quadlet_dir: &Path, file_name: &str) -> Result<Vec<DropIn>, DropInError> {
    let mut found: BTreeMap<String, DropIn> = BTreeMap::new();
    for dir in dirs(file_name) {
        let path = quadlet_dir.join(&dir);
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(DropInError { path, source }),
        };
        for entry in entries {
            let entry = entry.map_err(|source| DropInError {
                path: path.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".conf") || name == ROLLBACK_HOLD || found.contains_key(&name) {
                continue;
            }
            let file = entry.path();
            let text = std::fs::read_to_string(&file).map_err(|source| DropInError {
                path: file.clone(),
                source,
            })?;
            found.insert(
                name.clone(),
                DropIn {
                    dir: dir.clone(),
                    name,
                    text,
                },
            );
        }
    }
    Ok(found.into_values().collect())
}

/// The revision of `unit` with `dropins` applied: the unit's own revision when it has none (so
/// a unit without drop-ins keeps the revision it always had), else the hash of its canonical
/// text followed by each drop-in's place and canonical text.
pub fn revision_with(unit: &UnitFile, dropins: &[DropIn]) -> String {
    if dropins.is_empty() {
        return revision(unit);
    }
    let mut h = Sha256::new();
    h.update(canonical_text(unit).as_bytes());
    for d in dropins {
        h.update(format!("\n-- {}/{}\n", d.dir, d.name).as_bytes());
        // A drop-in that does not parse is quadlet's to refuse; its bytes still count.
        match UnitFile::parse(&d.text) {
            Ok(u) => h.update(canonical_text(&u).as_bytes()),
            Err(_) => h.update(d.text.as_bytes()),
        }
    }
    hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::put_file;

    #[test]
    fn directories_come_nearest_first() {
        assert_eq!(
            dirs("foo-bar@x.container"),
            [
                "foo-bar@x.container.d",
                "foo-bar@.container.d",
                "foo-.container.d",
                "container.d"
            ]
        );
        assert_eq!(dirs("db.volume"), ["db.volume.d", "volume.d"]);
    }

    #[test]
    fn a_nearer_file_hides_the_same_name_and_files_apply_in_name_order() {
        let q = tempfile::tempdir().expect("tmp");
        put_file(
            q.path(),
            "container.d/10-a.conf",
            "[Container]\nLabel=top=1\n",
        );
        put_file(
            q.path(),
            "container.d/30-c.conf",
            "[Container]\nLabel=top=3\n",
        );
        put_file(
            q.path(),
            "foo-.container.d/20-b.conf",
            "[Container]\nLabel=dash=1\n",
        );
        put_file(
            q.path(),
            "foo-bar.container.d/10-a.conf",
            "[Container]\nLabel=own=1\n",
        );
        put_file(q.path(), "foo-bar.container.d/notes.txt", "not a drop-in");
        put_file(
            q.path(),
            "other.container.d/10-a.conf",
            "[Container]\nLabel=other=1\n",
        );
        let found = read(q.path(), "foo-bar.container").expect("reads");
        let got: Vec<String> = found
            .iter()
            .map(|d| format!("{}/{}", d.dir, d.name))
            .collect();
        assert_eq!(
            got,
            [
                "foo-bar.container.d/10-a.conf",
                "foo-.container.d/20-b.conf",
                "container.d/30-c.conf"
            ]
        );
    }

    #[test]
    fn a_changed_drop_in_changes_the_revision_and_none_keeps_it() {
        let u = UnitFile::parse("[Container]\nImage=a:1\n").expect("parses");
        assert_eq!(revision_with(&u, &[]), revision(&u));
        let d = |text: &str| DropIn {
            dir: "app.container.d".into(),
            name: "10.conf".into(),
            text: text.into(),
        };
        let one = revision_with(&u, &[d("[Container]\nLabel=a=1\n")]);
        assert_ne!(one, revision(&u));
        assert_ne!(one, revision_with(&u, &[d("[Container]\nLabel=a=2\n")]));
        // Formatting alone does not restart anything.
        assert_eq!(
            one,
            revision_with(&u, &[d("# note\n[Container]\n Label = a=1\n")])
        );
    }
}
