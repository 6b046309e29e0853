//! Atomic file replacement: temp file in the same dir, fsync, rename, fsync the dir. A run
//! killed at any instant leaves the old file or the new one, never a torn one.

use super::{StateError, io_err};
use std::io::Write;
use std::path::Path;

pub fn atomic_write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StateError> {
    use std::os::unix::fs::PermissionsExt;
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(StateError::Symlink(path.to_path_buf()));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.refit-tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io_err("create", &tmp))?;
        f.write_all(bytes).map_err(io_err("write", &tmp))?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_err("chmod", &tmp))?;
        f.sync_all().map_err(io_err("fsync", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io_err("rename into", path))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Removes a file and makes the removal durable. A missing file is not an error.
pub fn remove_file(path: &Path) -> Result<bool, StateError> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            sync_dir(path.parent().unwrap_or(Path::new(".")))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err("remove", path)(e)),
    }
}

fn sync_dir(dir: &Path) -> Result<(), StateError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync", dir))
}

/// Reads a file that may not exist yet.
pub fn read_optional(path: &Path) -> Result<Option<String>, StateError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

/// Reads a JSON state file that may not exist yet; a file that does not parse is `Corrupt`.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    match read_optional(path)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StateError::Corrupt {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
    }
}

/// Writes a JSON state file atomically.
pub fn write_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
    mode: u32,
) -> Result<(), StateError> {
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| io_err("encode", path)(std::io::Error::other(e)))?;
    atomic_write(path, &json, mode)
}

/// A name that can be a file name under the state dir: letters, digits, `-` and `_`.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_whole_files_and_refuse_symlinks() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("a");
        atomic_write(&p, b"one", 0o644).expect("write");
        atomic_write(&p, b"two", 0o644).expect("write");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "two");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        assert!(matches!(
            atomic_write(&link, b"x", 0o644),
            Err(StateError::Symlink(_))
        ));
        assert_eq!(
            std::fs::read_dir(d.path()).expect("ls").count(),
            2,
            "a temp file was left behind"
        );
    }
}
