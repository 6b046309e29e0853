//! The state dir and every dir under it belong to the user running refit alone (0700): they
//! hold database backups and the key secrets are hashed with. A dir made by an older release
//! under the umask (0755) is narrowed the next time refit writes there.

use super::{StateError, io_err};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// What a state dir refused for its owner or type must become.
const REMEDY: &str = "refit keeps backups and keys under its state dir, so each dir there must be the running user's alone: fix its owner, or set state_dir";

/// The mode of every dir refit makes: its owner's alone.
pub const PRIVATE_DIR: u32 = 0o700;

/// Makes `dir` (its parent exists) a private dir: created 0700, or narrowed to 0700 when it
/// is already there; a symlink, or a dir of another user, is refused.
pub fn private_dir(dir: &Path) -> Result<(), StateError> {
    match std::fs::DirBuilder::new().mode(PRIVATE_DIR).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err("create", dir)(e)),
    }
    let m = dir.symlink_metadata().map_err(io_err("inspect", dir))?;
    if m.file_type().is_symlink() {
        return Err(StateError::Symlink(dir.to_path_buf()));
    }
    if !m.is_dir() {
        return Err(StateError::NotPrivate {
            path: dir.to_path_buf(),
            detail: format!("not a directory; {REMEDY}"),
        });
    }
    let me = rustix::process::geteuid().as_raw();
    if m.uid() != me {
        return Err(StateError::NotPrivate {
            path: dir.to_path_buf(),
            detail: format!(
                "owned by uid {}, not by uid {me} that runs refit; {REMEDY}",
                m.uid()
            ),
        });
    }
    if m.permissions().mode() & 0o7777 != PRIVATE_DIR {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR))
            .map_err(io_err("narrow to 0700", dir))?;
    }
    Ok(())
}

/// Makes `root` and each dir from it down to `root/sub` private; the dirs above `root` are
/// made as the system's umask says, as any parent dir.
pub fn private_tree(root: &Path, sub: &str) -> Result<(), StateError> {
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io_err("create", parent))?;
    }
    private_dir(root)?;
    let mut dir = root.to_path_buf();
    for part in Path::new(sub).components() {
        dir.push(part);
        private_dir(&dir)?;
    }
    Ok(())
}

/// Narrows what a tool wrote into a backup dir under its own umask: files to 0600, dirs to
/// 0700, symlinks left as they are (a chmod would follow them).
pub fn narrow_tree(dir: &Path) -> Result<(), StateError> {
    for entry in std::fs::read_dir(dir).map_err(io_err("read", dir))? {
        let entry = entry.map_err(io_err("read", dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err("inspect", &path))?;
        let mode = if kind.is_dir() {
            narrow_tree(&path)?;
            PRIVATE_DIR
        } else if kind.is_file() {
            0o600
        } else {
            continue;
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(io_err("narrow", &path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777
    }

    #[test]
    fn a_tree_is_made_0700_and_an_open_one_is_narrowed() {
        let d = tempfile::tempdir().expect("tmp");
        let root = d.path().join("state");
        std::fs::create_dir_all(root.join("backups")).expect("mkdir");
        for p in [&root, &root.join("backups")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        private_tree(&root, "backups/s1").expect("private");
        for p in [&root, &root.join("backups"), &root.join("backups/s1")] {
            assert_eq!(mode(p), 0o700, "{}", p.display());
        }
    }

    #[test]
    fn a_symlink_on_the_way_is_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let root = d.path().join("state");
        std::fs::create_dir_all(&root).expect("mkdir");
        std::os::unix::fs::symlink(d.path(), root.join("backups")).expect("link");
        let err = private_tree(&root, "backups/s1").expect_err("refused");
        assert!(matches!(err, StateError::Symlink(_)), "{err}");
        assert!(!d.path().join("s1").exists());
    }

    #[test]
    fn what_a_tool_wrote_under_its_umask_is_narrowed() {
        let d = tempfile::tempdir().expect("tmp");
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::write(sub.join("db.dump"), "x").expect("write");
        std::fs::write(d.path().join("toc"), "x").expect("write");
        for p in [&sub, &sub.join("db.dump"), &d.path().join("toc")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        narrow_tree(d.path()).expect("narrow");
        assert_eq!(mode(&sub), 0o700);
        assert_eq!(mode(&sub.join("db.dump")), 0o600);
        assert_eq!(mode(&d.path().join("toc")), 0o600);
    }
}
