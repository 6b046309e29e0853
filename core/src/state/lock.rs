//! The run lock: an flock on `STATE_DIR/lock`, which names its holder so a second run can say
//! who is in the way. The kernel drops the lock when the holder dies, so a killed run never
//! leaves a stale lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another refit run holds the lock {path} ({holder}); wait for it to finish, then run again"
    )]
    Held { path: PathBuf, holder: String },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Held for as long as it lives.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    pub fn acquire(path: &Path, holder: &str) -> Result<Lock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(LockError::Held {
                    path: path.to_path_buf(),
                    holder: holder.trim().to_string(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        // The lock file's content is only a note on who holds it, so it is rewritten in place:
        // the inode must stay the one that is locked.
        let note = format!(
            "{holder}, pid {}, since {}",
            std::process::id(),
            crate::time::now_rfc3339()
        );
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(note.as_bytes()).map_err(io)?;
        Ok(Lock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_named() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("lock");
        let _first = Lock::acquire(&p, "container_unit hello").expect("first");
        let err = Lock::acquire(&p, "update").expect_err("second must fail");
        assert!(err.to_string().contains("container_unit hello"), "{err}");
    }
}
