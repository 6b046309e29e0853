//! Asking quadlet itself whether it accepts a unit, before refit writes it. A unit quadlet
//! rejects generates no service: written over a running one, the service would no longer
//! load after the next `daemon-reload` (at every boot).
//!
//! The check is quadlet's own dry run over a temporary directory holding the new text beside
//! the unit's siblings (a `.container` may name a `.network` or `.volume` unit there). Only
//! what quadlet says of the unit being checked counts: a sibling's own fault is not this
//! unit's to refuse.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where distributions install the quadlet generator.
const QUADLET_PATHS: &[&str] = &["/usr/libexec/podman/quadlet", "/usr/lib/podman/quadlet"];

#[derive(Debug, thiserror::Error)]
pub enum QuadletError {
    #[error(
        "quadlet rejects {unit}: {detail}; fix the unit's options (nothing was written, and the unit on disk is unchanged)"
    )]
    Rejected { unit: String, detail: String },
    #[error(
        "quadlet is not installed (looked in {}); install podman 4.4 or later, which ships it",
        QUADLET_PATHS.join(", ")
    )]
    Missing,
    #[error("cannot check {unit} with quadlet: {detail}; check that {dir} is readable")]
    Io {
        unit: String,
        dir: PathBuf,
        detail: String,
    },
}

pub trait Quadlet: Sync {
    /// Whether quadlet accepts `text` as the unit `file_name`, with the other units of
    /// `quadlet_dir` beside it.
    fn check(&self, file_name: &str, text: &str, quadlet_dir: &Path) -> Result<(), QuadletError>;
}

/// The quadlet generator on this host, run with `-dryrun`.
pub struct QuadletBinary;

impl Quadlet for QuadletBinary {
    fn check(&self, file_name: &str, text: &str, quadlet_dir: &Path) -> Result<(), QuadletError> {
        let bin = QUADLET_PATHS
            .iter()
            .map(Path::new)
            .find(|p| p.exists())
            .ok_or(QuadletError::Missing)?;
        let io = |detail: String| QuadletError::Io {
            unit: file_name.to_string(),
            dir: quadlet_dir.to_path_buf(),
            detail,
        };
        let tmp = tempfile::Builder::new()
            .prefix("refit-quadlet-")
            .tempdir()
            .map_err(|e| io(e.to_string()))?;
        let staged = stage(quadlet_dir, tmp.path(), file_name, text).map_err(|e| io(e.to_string()));
        let out = staged.and_then(|()| {
            Command::new(bin)
                .args(["-dryrun", "-no-kmsg-log"])
                .env("QUADLET_UNIT_DIRS", tmp.path())
                .output()
                .map_err(|e| io(format!("cannot run {}: {e}", bin.display())))
        })?;
        if out.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        match rejection(&stderr, file_name, tmp.path(), quadlet_dir) {
            Some(detail) => Err(QuadletError::Rejected {
                unit: file_name.to_string(),
                detail,
            }),
            None => Ok(()),
        }
    }
}

/// Copies the regular files of `dir` (not instance links, not subdirectories) and the new text
/// into `into`.
fn stage(dir: &Path, into: &Path, file_name: &str, text: &str) -> std::io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            if name == file_name || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            std::fs::copy(e.path(), into.join(&name))?;
        }
    }
    std::fs::write(into.join(file_name), text)
}

/// quadlet's complaint about `file_name`, with the temporary dir named as the real one.
fn rejection(stderr: &str, file_name: &str, tmp: &Path, real: &Path) -> Option<String> {
    let marker = format!("converting \"{file_name}\":");
    let lines: Vec<String> = stderr
        .lines()
        .filter_map(|l| l.split_once(&marker).map(|(_, why)| why.trim()))
        .map(|why| why.replace(&tmp.display().to_string(), &real.display().to_string()))
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_checked_units_complaint_counts_and_names_the_real_dir() {
        let stderr = "quadlet-generator[71]: Loading source unit file /tmp/q/bad.container\n\
            quadlet-generator[71]: converting \"other.container\": unsupported key 'X' in group 'Container' in /tmp/q/other.container\n\
            quadlet-generator[71]: converting \"bad.container\": unsupported key 'BogusKey' in group 'Container' in /tmp/q/bad.container\n";
        let tmp = Path::new("/tmp/q");
        let real = Path::new("/etc/containers/systemd");
        assert_eq!(
            rejection(stderr, "bad.container", tmp, real).as_deref(),
            Some(
                "unsupported key 'BogusKey' in group 'Container' in /etc/containers/systemd/bad.container"
            )
        );
        assert_eq!(rejection(stderr, "good.container", tmp, real), None);
    }

    #[test]
    fn staging_copies_siblings_but_not_links_and_puts_the_new_text() {
        let src = tempfile::tempdir().expect("tmp");
        let dst = tempfile::tempdir().expect("tmp");
        std::fs::write(src.path().join("net.network"), "[Network]\n").expect("w");
        std::fs::write(src.path().join("app.container"), "old").expect("w");
        std::os::unix::fs::symlink("app.container", src.path().join("app@1.container"))
            .expect("link");
        stage(src.path(), dst.path(), "app.container", "new").expect("stage");
        let mut names: Vec<_> = std::fs::read_dir(dst.path())
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["app.container", "net.network"]);
        let text = std::fs::read_to_string(dst.path().join("app.container")).expect("r");
        assert_eq!(text, "new");
    }
}
