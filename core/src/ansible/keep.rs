//! A module keeps a copy of its own binary on the host when the controller's action asks
//! (plugins/plugin_utils/cached_binary.py): later calls run that copy in one round trip, with
//! the arguments on standard input, instead of copying 5 MB to the host for every task.
//!
//! The copy is named `MODULE-SHA256` and written only when this very binary hashes to that
//! name, so a kept copy is always the release that asked for it. Keeping is best effort: a
//! host where it fails (a read-only /var, a user without root) runs every call the usual way.

use crate::state::atomic_write;
use sha2::{Digest, Sha256};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the copies are kept: a cache, so removing it only costs the next call a copy.
pub const KEEP_DIR: &str = "/var/cache/refit/modules";

#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    #[error("{0:?} is not a name this module keeps a copy under (MODULE-SHA256)")]
    Name(String),
    #[error("this binary does not hash to {0}; not kept")]
    Digest(String),
    #[error("{0} is not a directory of root's alone; not kept there")]
    Dir(PathBuf),
    #[error("cannot keep a copy of this module at {path} ({source}); the call runs the usual way")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Write(#[from] crate::state::StateError),
}

/// An I/O error about `path`, kept as the cause.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeepError + '_ {
    move |source| KeepError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Keeps the running binary as `dir/name` unless it is there already; `Ok(true)` when written.
pub fn keep_self(module: &str, name: &str, dir: &Path) -> Result<bool, KeepError> {
    let exe = std::env::current_exe().map_err(io(Path::new("/proc/self/exe")))?;
    keep(&exe, module, name, dir)
}

/// Keeps the binary `exe` as `dir/name`, when it hashes to that name.
fn keep(exe: &Path, module: &str, name: &str, dir: &Path) -> Result<bool, KeepError> {
    let digest = name
        .strip_prefix(module)
        .and_then(|rest| rest.strip_prefix('-'))
        .filter(|d| {
            d.len() == 64
                && d.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .ok_or_else(|| KeepError::Name(name.to_string()))?;
    let bytes = std::fs::read(exe).map_err(io(exe))?;
    let ours = format!("{:x}", Sha256::digest(&bytes));
    if ours != digest {
        return Err(KeepError::Digest(name.to_string()));
    }
    own_dir(dir)?;
    let path = dir.join(name);
    if sound_copy(&path, &bytes) {
        return Ok(false);
    }
    // Something else under the name (a symlink, another's file, other bytes): the action
    // refused to run it, and a fresh copy replaces it, never written through it.
    if path.symlink_metadata().is_ok() {
        std::fs::remove_file(&path).map_err(io(&path))?;
    }
    atomic_write(&path, &bytes, 0o700)?;
    Ok(true)
}

/// Whether `path` is a copy the action runs: a regular file of this user, writable by nobody
/// else, holding these very bytes (kept_copy.py checks the same on the host).
fn sound_copy(path: &Path, bytes: &[u8]) -> bool {
    let Ok(m) = path.symlink_metadata() else {
        return false;
    };
    m.is_file()
        && m.uid() == rustix::process::geteuid().as_raw()
        && m.permissions().mode() & 0o022 == 0
        && std::fs::read(path).is_ok_and(|held| held == bytes)
}

/// The directory, made 0700 if missing; one that anyone but its owner could write to, or that
/// is a symlink, is refused: what is kept there is run as whoever runs the modules.
fn own_dir(dir: &Path) -> Result<(), KeepError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))?;
    let m = dir.symlink_metadata().map_err(io(dir))?;
    let writable_by_others = m.permissions().mode() & 0o022 != 0;
    if !m.is_dir() || writable_by_others || m.uid() != rustix::process::geteuid().as_raw() {
        return Err(KeepError::Dir(dir.to_path_buf()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINARY: &[u8] = b"#!/bin/true\n";

    /// A stand-in binary, and the name it is kept under.
    fn binary(dir: &Path) -> (PathBuf, String) {
        let exe = dir.join("mod");
        std::fs::write(&exe, BINARY).expect("write");
        (exe, format!("mod-{:x}", Sha256::digest(BINARY)))
    }

    #[test]
    fn a_binary_is_kept_once_under_its_own_digest() {
        let d = tempfile::tempdir().expect("tmp");
        let dir = d.path().join("modules");
        let (exe, name) = binary(d.path());
        assert!(keep(&exe, "mod", &name, &dir).expect("kept"));
        assert!(!keep(&exe, "mod", &name, &dir).expect("there already"));
        assert_eq!(std::fs::read(dir.join(&name)).expect("kept"), BINARY);
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join(&name)), 0o700);
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symlink_another_binary_or_an_open_file_under_the_name_is_replaced() {
        let d = tempfile::tempdir().expect("tmp");
        let dir = d.path().join("modules");
        let (exe, name) = binary(d.path());
        let target = d.path().join("planted");
        std::fs::write(&target, "#!/bin/sh\necho planted\n").expect("write");
        let plant: [&dyn Fn(&Path); 3] = [
            &|p| std::os::unix::fs::symlink(&target, p).expect("link"),
            &|p| std::fs::write(p, "other bytes").expect("write"),
            &|p| {
                std::fs::write(p, BINARY).expect("write");
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).expect("chmod");
            },
        ];
        for (i, planted) in plant.iter().enumerate() {
            own_dir(&dir).expect("dir");
            let kept = dir.join(&name);
            let _ = std::fs::remove_file(&kept);
            planted(&kept);
            assert!(keep(&exe, "mod", &name, &dir).expect("kept"), "case {i}");
            let m = kept.symlink_metadata().expect("stat");
            assert!(
                m.is_file() && m.permissions().mode() & 0o777 == 0o700,
                "case {i}"
            );
            assert_eq!(std::fs::read(&kept).expect("read"), BINARY, "case {i}");
        }
        assert_eq!(
            std::fs::read(&target).expect("read"),
            b"#!/bin/sh\necho planted\n"
        );
    }

    #[test]
    fn another_digest_or_name_or_a_shared_dir_keeps_nothing() {
        let d = tempfile::tempdir().expect("tmp");
        let dir = d.path().join("modules");
        let (exe, name) = binary(d.path());
        let wrong = format!("mod-{}", "0".repeat(64));
        let kept = |name: &str| keep(&exe, "mod", name, &dir);
        assert!(matches!(kept(&wrong), Err(KeepError::Digest(_))));
        for bad in ["other-00", "mod-../../x", "mod-", "mod"] {
            assert!(matches!(kept(bad), Err(KeepError::Name(_))), "{bad}");
        }
        assert!(!dir.join(&wrong).exists());
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(kept(&name), Err(KeepError::Dir(_))));
        assert!(!dir.join(&name).exists());
    }
}
