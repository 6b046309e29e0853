//! A unit's revision: the sha256 of its canonical text, leaving out refit's own label.
//!
//! The running container carries the revision as a label, so "which revision runs" is a
//! fact read from podman, not a guess.

use super::file::{Entry, UnitFile};
use sha2::{Digest, Sha256};

/// The label key, on the container, that names the revision it was started from.
pub const REVISION_LABEL: &str = "io.refit.revision";

/// True for the `Label=io.refit.revision=...` entry refit writes.
pub fn is_revision_label(section: &str, key: &str, value: &str) -> bool {
    section == "Container" && key == "Label" && value.starts_with(&format!("{REVISION_LABEL}="))
}

/// The canonical text: normalized entries, without the revision label (which would be circular).
pub fn canonical_text(unit: &UnitFile) -> String {
    unit.render_filtered(is_revision_label)
}

pub fn revision(unit: &UnitFile) -> String {
    hex(&Sha256::digest(canonical_text(unit).as_bytes()))
}

/// Eight hex digits of the sha256 of `text`: tells names apart, secures nothing.
pub fn short_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes())[..4])
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The unit as refit writes it: the canonical entries plus the label naming `revision`.
pub fn with_revision_label(unit: &UnitFile, revision: &str) -> UnitFile {
    let mut out = unit.clone();
    for s in &mut out.sections {
        let name = s.name.clone();
        s.entries
            .retain(|e| !is_revision_label(&name, &e.key, &e.value));
    }
    out.section_mut("Container")
        .entries
        .push(Entry::new("Label", format!("{REVISION_LABEL}={revision}")));
    out
}

/// The revision label a file on disk carries, if any.
pub fn recorded_label(unit: &UnitFile) -> Option<String> {
    unit.values("Container", "Label")
        .filter_map(|v| v.strip_prefix(REVISION_LABEL)?.strip_prefix('='))
        .map(str::to_string)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(text: &str) -> String {
        revision(&UnitFile::parse(text).expect("parses"))
    }

    #[test]
    fn formatting_edits_keep_the_revision() {
        let base = rev("[Container]\nImage=a:1\nEnvironment=A=1\n");
        assert_eq!(
            base,
            rev("# hi\n[Container]\n\nImage = a:1\n  Environment=A=1  \n")
        );
        assert_eq!(
            base,
            rev("[Container]\nImage=a:1\nEnvironment=A=1\nLabel=io.refit.revision=old\n")
        );
    }

    #[test]
    fn any_option_change_alters_the_revision() {
        let base = rev("[Container]\nImage=a:1\nEnvironment=A=1\n");
        for changed in [
            "[Container]\nImage=a:2\nEnvironment=A=1\n",
            "[Container]\nImage=a:1\nEnvironment=A=2\n",
            "[Container]\nEnvironment=A=1\nImage=a:1\n",
            "[Container]\nImage=a:1\nEnvironment=A=1\n[Service]\nRestart=always\n",
            "[Container]\nImage=a:1\nEnvironment=A=1\nLabel=io.refit.other=1\n",
        ] {
            assert_ne!(base, rev(changed), "{changed:?} kept the revision");
        }
    }

    #[test]
    fn the_label_written_is_found_again() {
        let u = UnitFile::parse("[Container]\nImage=a:1\n").expect("parses");
        let r = revision(&u);
        let written = with_revision_label(&u, &r);
        assert_eq!(recorded_label(&written).as_deref(), Some(r.as_str()));
        assert_eq!(revision(&written), r);
    }
}
