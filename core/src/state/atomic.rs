//! Atomic file replacement: temp file in the same dir, fsync, rename, fsync the dir. A run
//! killed at any instant leaves the old file or the new one, never a torn one.

use super::{StateError, io_err};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How many temp names a write tries before it gives up: each try meets only something a
/// concurrent writer (or an attacker) put at that name.
const TMP_TRIES: u32 = 16;

pub fn atomic_write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StateError> {
    atomic_write_owned(path, bytes, mode, None)
}

/// A file's owner, to give a file written in place of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

/// `atomic_write`, the new file given `owner` before it takes the path: a file put back as
/// another user's is never the writer's, not even briefly.
pub fn atomic_write_owned(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<Owner>,
) -> Result<(), StateError> {
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(StateError::Symlink(path.to_path_buf()));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let (tmp, mut f) = create_tmp(path, mode)?;
    let result = (|| {
        f.write_all(bytes).map_err(io_err("write", &tmp))?;
        if let Some(Owner { uid, gid }) = owner {
            std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).map_err(io_err("chown", &tmp))?;
            // chown clears set-id bits: the mode goes on after it.
            f.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(io_err("chmod", &tmp))?;
        }
        f.sync_all().map_err(io_err("fsync", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io_err("rename into", path))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The temp file of a write to `path`, attempt `n`: in the same dir, so the rename is atomic.
fn tmp_path(path: &Path, n: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new("."));
    dir.join(format!(".{name}.refit-tmp.{}.{n}", std::process::id()))
}

/// Creates a fresh temp file: never one that exists, never through a symlink, and with its
/// final mode from the start, so a 0600 file is never readable by others, not even briefly.
fn create_tmp(path: &Path, mode: u32) -> Result<(PathBuf, File), StateError> {
    let mut last = None;
    for n in 0..TMP_TRIES {
        let tmp = tmp_path(path, n);
        match open_new(&tmp, mode) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(io_err("create", &tmp)(e)),
        }
    }
    let tmp = tmp_path(path, TMP_TRIES - 1);
    Err(io_err("create", &tmp)(last.unwrap_or_else(|| {
        std::io::Error::from(std::io::ErrorKind::AlreadyExists)
    })))
}

/// `O_CREAT | O_EXCL | O_NOFOLLOW`, created with `mode`; the umask cannot widen it, and a
/// chmod narrows what the umask took away from a wider mode.
fn open_new(p: &Path, mode: u32) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(p)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(f)
}

/// Creates `path` holding `bytes`, only if nothing is there: a file, or a symlink.
pub fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StateError> {
    let mut f = open_new(path, mode).map_err(io_err("create", path))?;
    f.write_all(bytes).map_err(io_err("write", path))?;
    f.sync_all().map_err(io_err("fsync", path))?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
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

/// Reads a file that may not exist yet. A symlink is refused, not followed: what refit reads
/// it may write back, and a planted link must not make it echo another file.
pub fn read_optional(path: &Path) -> Result<Option<String>, StateError> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path);
    let mut f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(StateError::Symlink(path.to_path_buf()));
        }
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut f, &mut text).map_err(io_err("read", path))?;
    Ok(Some(text))
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

    #[test]
    fn a_symlink_at_the_temp_name_is_not_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tempdir");
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").expect("victim");
        let p = d.path().join("unit");
        std::os::unix::fs::symlink(&victim, tmp_path(&p, 0)).expect("plant");
        atomic_write(&p, b"secret", 0o600).expect("write beside the planted link");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "secret");
        let mode = std::fs::metadata(&p).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn create_new_refuses_a_symlink_and_an_existing_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").expect("victim");
        let link = d.path().join("key");
        std::os::unix::fs::symlink(&victim, &link).expect("link");
        assert!(create_new(&link, b"x", 0o600).is_err());
        assert!(create_new(&victim, b"x", 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    }
}
