//! refit's state on the host (`/var/lib/refit` by default): recent revisions of each unit,
//! migration stamps, the stream in use, and the lock. Every write is atomic.

mod atomic;
mod lock;
mod revisions;

pub use atomic::{
    atomic_write, create_new, is_plain_name, read_json, read_optional, remove_file, write_json,
};
pub use lock::{Lock, LockError};
pub use revisions::{RevisionRecord, UnitHistory};

use std::path::{Path, PathBuf};

pub const DEFAULT_STATE_DIR: &str = "/var/lib/refit";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot {action} {path}: {source}; check the state dir is writable, or set state_dir")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0} is a symlink; refit does not write through symlinks: replace it with a plain file or directory"
    )]
    Symlink(PathBuf),
    #[error("{path} is not valid refit state: {detail}; move it aside and run again")]
    Corrupt { path: PathBuf, detail: String },
    #[error(transparent)]
    Lock(#[from] LockError),
}

pub fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> StateError + 'a {
    move |source| StateError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The state dir. Opening it never creates it; `ensure` does, when something is to be written.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StateDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Creates the dir and `sub` under it, refusing symlinks on the way.
    pub fn ensure(&self, sub: &str) -> Result<PathBuf, StateError> {
        let dir = if sub.is_empty() {
            self.root.clone()
        } else {
            self.root.join(sub)
        };
        for p in [&self.root, &dir] {
            if p.symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(StateError::Symlink(p.clone()));
            }
        }
        std::fs::create_dir_all(&dir).map_err(io_err("create", &dir))?;
        Ok(dir)
    }

    /// Takes the run lock; a second run meets a clear error naming the holder.
    pub fn lock(&self, holder: &str) -> Result<Lock, StateError> {
        self.ensure("")?;
        Ok(Lock::acquire(&self.root.join("lock"), holder)?)
    }

    pub fn unit_history(&self, unit_file: &str) -> Result<UnitHistory, StateError> {
        UnitHistory::load(&self.root.join("units").join(format!("{unit_file}.json")))
    }

    pub fn save_unit_history(&self, unit_file: &str, h: &UnitHistory) -> Result<(), StateError> {
        let dir = self.ensure("units")?;
        h.save(&dir.join(format!("{unit_file}.json")))
    }
}
