//! refit's state on the host (`/var/lib/refit` by default): recent revisions of each unit,
//! migration stamps, the stream in use, and the lock. Every write is atomic.

mod atomic;
mod dirs;
mod lease;
mod lock;
mod revisions;
mod stage;

pub use atomic::{
    Owner, atomic_write, atomic_write_owned, create_new, is_plain_name, read_json, read_optional,
    remove_file, write_json,
};
pub use dirs::{PRIVATE_DIR, narrow_tree, private_dir};
pub use lease::{Heartbeat, Lease, RUN_ID_DOC, RunLock};
pub use lock::{Lock, LockError};
pub use revisions::{
    KEEP as KEEP_REVISIONS, MAX_KEEP as MAX_KEEP_REVISIONS, PickError, RevisionRecord, UnitHistory,
};
pub use stage::{Held, Installed, STAGED, Stage, Staged};

use std::path::{Path, PathBuf};

pub const DEFAULT_STATE_DIR: &str = "/var/lib/refit";

// The directories under the state dir, named once.
/// How long a module waits for a held state lock before it is refused: longer than any
/// refusal takes (milliseconds), far shorter than a phase at work (seconds to minutes).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);
const CHECKPOINTS: &str = "checkpoints";
const STOPS: &str = "stops";
const MIGRATIONS: &str = "migrations";
const SECRETS: &str = "secrets";
const BACKUPS: &str = "backups";
const UNITS: &str = "units";
const RUNS: &str = "runs";
const INPUTS: &str = "inputs";

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
    #[error("{path} is {detail}")]
    NotPrivate { path: PathBuf, detail: String },
    #[error("{path} is not valid refit state: {detail}; move it aside and run again")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path} is not a valid stage ({detail}): it holds the unit texts an unfinished run has still to install; run that flow again, whose preflight writes its stage anew, or remove the file if the run was given up"
    )]
    CorruptStage { path: PathBuf, detail: String },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(
        "the run lease {path} belongs to run {holder}, not to run {run_id}, which made this call: another run took the host over, so this call did nothing; let run {holder} finish, and stop run {run_id}"
    )]
    NotLeaseHolder {
        path: PathBuf,
        holder: String,
        run_id: String,
    },
    #[error(transparent)]
    BootTime(#[from] crate::time::BootTimeError),
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

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The stream the last finished flow reached.
    pub fn stream_file(&self) -> PathBuf {
        self.path("stream")
    }

    /// The run lease of an unfinished flow.
    pub fn lease_file(&self) -> PathBuf {
        self.path("flow-lease.json")
    }

    /// The lock every module takes while it works; the kernel lets go of it when its holder dies.
    pub fn lock_file(&self) -> PathBuf {
        self.path("lock")
    }

    /// What podman answered the last flow call that found nothing to do (`podman::record`).
    pub fn podman_record(&self) -> PathBuf {
        self.path("podman-record.json")
    }

    /// The key secret values are hashed with, so a changed secret changes a revision.
    pub fn secret_key_file(&self) -> PathBuf {
        self.path("secret-key")
    }

    /// The podman secrets a unit's revisions use.
    pub fn unit_secrets(&self, unit_file: &str) -> PathBuf {
        self.path(&format!("{SECRETS}/{unit_file}.json"))
    }

    /// What refit keeps of a unit's outside inputs as they last ran (`kept_inputs`).
    pub fn kept_inputs(&self, unit_file: &str) -> PathBuf {
        self.path(&format!("{INPUTS}/{unit_file}.json"))
    }

    /// The dir of a unit's kept file copies, named after their content; `unit_file` a plain
    /// name.
    pub fn kept_files_dir(&self, unit_file: &str) -> PathBuf {
        self.path(&format!("{INPUTS}/{unit_file}.d"))
    }

    /// Every checkpoint: how a flow's units were before it changed them.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.path(CHECKPOINTS)
    }

    /// A flow's checkpoint. `name` must be a plain name (`is_plain_name`).
    pub fn checkpoint(&self, name: &str) -> PathBuf {
        self.path(&format!("{CHECKPOINTS}/{name}.json"))
    }

    /// What a flow (or a `stop_services` record) stopped, to start again.
    pub fn stop_record(&self, name: &str) -> PathBuf {
        self.path(&format!("{STOPS}/{name}.json"))
    }

    /// A migration's stamp: it ran, or was not pending, for one image.
    pub fn migration_stamp(&self, key: &str) -> PathBuf {
        self.path(&format!("{MIGRATIONS}/{key}.json"))
    }

    /// The backups taken for one stream.
    pub fn backups_dir(&self, stream: &str) -> PathBuf {
        self.path(&format!("{BACKUPS}/{stream}"))
    }

    /// Creates the backups dir of one stream, each dir on the way 0700.
    pub fn ensure_backups(&self, stream: &str) -> Result<PathBuf, StateError> {
        self.ensure(&format!("{BACKUPS}/{stream}"))
    }

    /// The backups an unfinished run took, which its recovery restores.
    pub fn backup_restore_list(&self, record: &str) -> PathBuf {
        self.path(&format!("{BACKUPS}/restore-{record}.json"))
    }

    /// Where detached module calls write their progress and result, one dir each
    /// (ansible/detach.rs).
    pub fn runs_dir(&self) -> PathBuf {
        self.path(RUNS)
    }

    /// Creates the dir of one detached call, `name` a plain name, each dir on the way 0700.
    pub fn ensure_run_dir(&self, name: &str) -> Result<PathBuf, StateError> {
        self.ensure(&format!("{RUNS}/{name}"))
    }

    /// Creates the directory a path of this state dir lives in, refusing symlinks on the way.
    pub fn ensure_parent(&self, path: &Path) -> Result<PathBuf, StateError> {
        let sub = path
            .parent()
            .and_then(|d| d.strip_prefix(&self.root).ok())
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.ensure(&sub)
    }

    /// Creates the dir and `sub` under it, each 0700 (narrowed to it where it is wider),
    /// refusing symlinks and another user's dirs on the way.
    pub fn ensure(&self, sub: &str) -> Result<PathBuf, StateError> {
        dirs::private_tree(&self.root, sub)?;
        Ok(if sub.is_empty() {
            self.root.clone()
        } else {
            self.root.join(sub)
        })
    }

    /// Takes the run lock for a module's work, waiting out a refusal's brief hold; a second
    /// run meets a clear error naming the holder.
    pub fn lock(&self, holder: &str) -> Result<Lock, StateError> {
        self.lock_within(holder, LOCK_PATIENCE)
    }

    /// Takes the lock for a whole command (refitctl's), whose holder is a whole run: waiting
    /// would only delay the refusal.
    pub fn lock_at_once(&self, holder: &str) -> Result<Lock, StateError> {
        self.lock_within(holder, std::time::Duration::ZERO)
    }

    fn lock_within(&self, holder: &str, patience: std::time::Duration) -> Result<Lock, StateError> {
        self.ensure("")?;
        Ok(Lock::acquire(&self.lock_file(), holder, patience)?)
    }

    pub fn unit_history(&self, unit_file: &str) -> Result<UnitHistory, StateError> {
        UnitHistory::load(&self.root.join(UNITS).join(format!("{unit_file}.json")))
    }

    pub fn save_unit_history(&self, unit_file: &str, h: &UnitHistory) -> Result<(), StateError> {
        let dir = self.ensure(UNITS)?;
        h.save(&dir.join(format!("{unit_file}.json")))
    }
}
