//! Backups before migrations. When a migration with a `backup` is pending, its services are
//! stopped, then the deployment's backup command runs in a one-off container with a new
//! directory of the state dir mounted at /backup (for PostgreSQL: `pg_dump -Fc -f /backup/..`),
//! and only then the migration. Each backup is recorded beside its data, and backups are kept
//! per stream, pruned to `keep`.
//!
//! The run's backups are also listed under its stop record's name (`restore-NAME.json`).
//! `restore: true`, the flow's recovery, restores them, newest first, with the restore command,
//! so the previous release starts on its own schema. The list counts only while the stop
//! record it belongs to exists: a flow that finished removed that, so a later failure of a run
//! that migrated nothing restores nothing.

use crate::host::Host;
use crate::podman::{Finished, ImageRef, OneOff};
use crate::state::{StateDir, StateError, is_plain_name, private_dir, read_json, remove_file};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the backup's directory is mounted in the backup and restore containers.
pub const MOUNT: &str = "/backup";
/// The record each backup directory holds beside the data.
const RECORD: &str = "record.json";

/// A migration's `backup`: how to take its data's backup, and how to put it back.
#[derive(Debug, Clone, Deserialize)]
pub struct Backup {
    pub image: String,
    #[serde(default)]
    pub volumes: Vec<String>,
    pub network: Option<String>,
    #[serde(default)]
    pub env: Map<String, Value>,
    /// Passed to the backup and restore containers like `env`, but masked in every result and
    /// never written to a file: a restore takes the values from its own call.
    #[serde(default)]
    pub secret_env: Map<String, Value>,
    pub command: Vec<String>,
    pub restore_command: Vec<String>,
    #[serde(default = "default_stream")]
    pub stream: String,
    #[serde(default = "default_keep")]
    pub keep: usize,
}

fn default_stream() -> String {
    "default".into()
}

fn default_keep() -> usize {
    3
}

pub use crate::results::run_migrations::BackupTaken as Taken;

mod staged;
pub use staged::{Staged, stage};

/// A backup listed for the run's recovery, with the stamp of the migration that followed it: a
/// restore removes that stamp, so the schema put back is judged (and migrated) again.
#[derive(Debug, Serialize, Deserialize)]
struct Listed {
    #[serde(flatten)]
    taken: Taken,
    stamp: PathBuf,
    /// The migration as the deployment names it, whose `backup` gives a restore the values
    /// of the variables `taken.env` names.
    #[serde(default)]
    migration: String,
}

/// Where and how a run takes and restores its backups: the host, its state dir, the run's
/// stop record name (its backups are listed under it) and each container's deadline.
pub struct Site<'a> {
    pub host: &'a Host<'a>,
    pub state: &'a StateDir,
    pub record: &'a str,
    pub timeout: Duration,
}

/// The migration a backup is taken for: its source, its name in the deployment, its stamp.
pub struct For<'a> {
    pub source: &'a str,
    pub migration: &'a str,
    pub stamp: &'a Path,
}

/// The environment each migration's backup gives its containers (`NAME=VALUE`), by the
/// migration's name: taken from the call, since no value is ever stored.
pub type EnvByMigration = HashMap<String, Vec<String>>;

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "{0} is an empty list; give the command as a list of words, for example [pg_dump, -Fc, -f, /backup/db.dump]"
    )]
    EmptyCommand(&'static str),
    #[error("stream {0:?} is not a plain name; use letters, digits, '-' and '_'")]
    BadStream(String),
    #[error("keep is 0; keep at least the backup a failed run restores (1 or more)")]
    KeepZero,
    #[error("image {0:?} is not an image reference: {1}")]
    BadImage(String, String),
    #[error(
        "{source_name}: the backup command exited {rc}, so the migration did not run; fix the backup (its directory {dir} stays for a look) and run again. Last output:\n{tail}"
    )]
    BackupFailed {
        source_name: String,
        rc: i64,
        dir: String,
        tail: String,
    },
    #[error(
        "{source_name}: restoring the backup in {dir} exited {rc}; it stays listed, so `run_migrations restore=true` tries again. Last output:\n{tail}"
    )]
    RestoreFailed {
        source_name: String,
        rc: i64,
        dir: String,
        tail: String,
    },
    #[error(
        "{source_name}: the backup in {dir} needs the variables {names:?}, and no migration {migration:?} with a backup in this call gives them; pass the run's migrations, as the flow's recovery does"
    )]
    EnvGone {
        source_name: String,
        dir: String,
        migration: String,
        names: Vec<String>,
    },
    #[error("{0} is not a variable name; use letters, digits and '_', not starting with a digit")]
    EnvName(String),
    #[error("{what} timed out after {secs} s; the container was killed and removed")]
    Timeout { what: String, secs: u64 },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Podman(#[from] crate::podman::PodmanError),
}

impl Backup {
    /// Checks the backup's parameters before the host is touched.
    pub fn validate(&self) -> Result<(), BackupError> {
        if self.command.is_empty() {
            return Err(BackupError::EmptyCommand("command"));
        }
        if self.restore_command.is_empty() {
            return Err(BackupError::EmptyCommand("restore_command"));
        }
        if !is_plain_name(&self.stream) {
            return Err(BackupError::BadStream(self.stream.clone()));
        }
        if self.keep == 0 {
            return Err(BackupError::KeepZero);
        }
        for (what, map) in [("env", &self.env), ("secret_env", &self.secret_env)] {
            if let Some(k) = map.keys().find(|k| !crate::unit::render::is_env_name(k)) {
                return Err(BackupError::EnvName(format!("{what}.{k}")));
            }
        }
        ImageRef::parse(&self.image)
            .map_err(|e| BackupError::BadImage(self.image.clone(), e.to_string()))?;
        Ok(())
    }

    /// The containers' environment, `NAME=VALUE`, secret values included.
    pub fn env_words(&self) -> Vec<String> {
        self.env
            .iter()
            .chain(&self.secret_env)
            .map(|(k, v)| {
                format!(
                    "{k}={}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_string)
                )
            })
            .collect()
    }

    /// The names of the variables, what a record keeps.
    fn env_names(&self) -> Vec<String> {
        self.env
            .keys()
            .chain(self.secret_env.keys())
            .cloned()
            .collect()
    }
}

/// The list of this run's backups, under the stop record's name.
fn list_path(state: &StateDir, record: &str) -> PathBuf {
    state.backup_restore_list(record)
}

/// Before a run's first stop: a list left by an earlier run that finished (its stop record is
/// gone) must never be restored by this one.
pub fn forget_finished(
    state: &StateDir,
    record: &str,
    stop_record: &Path,
) -> Result<(), StateError> {
    if !stop_record.exists() {
        remove_file(&list_path(state, record))?;
    }
    Ok(())
}

/// Whether `restore` has a backup of this unfinished run to put back.
pub fn has_restore(
    state: &StateDir,
    record: &str,
    stop_record: &Path,
) -> Result<bool, BackupError> {
    if !stop_record.exists() {
        return Ok(false);
    }
    let list: Vec<Listed> = read_json(&list_path(state, record))?.unwrap_or_default();
    Ok(!list.is_empty())
}

/// Restores this run's backups, newest first, when its stop record says the run is still
/// unfinished; returns what it restored. A restored list is removed, so it is restored once.
pub fn restore(
    site: &Site,
    stop_record: &Path,
    envs: &EnvByMigration,
) -> Result<Vec<Taken>, BackupError> {
    let list_file = list_path(site.state, site.record);
    if !stop_record.exists() {
        return Ok(Vec::new());
    }
    let list: Vec<Listed> = read_json(&list_file)?.unwrap_or_default();
    for l in list.iter().rev() {
        let t = &l.taken;
        let given = envs
            .get(&l.migration)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let gives = |name: &String| {
            given.iter().any(|w| {
                w.strip_prefix(name.as_str())
                    .is_some_and(|r| r.starts_with('='))
            })
        };
        if !t.env.iter().all(gives) {
            return Err(BackupError::EnvGone {
                source_name: t.source.clone(),
                dir: t.dir.clone(),
                migration: l.migration.clone(),
                names: t.env.clone(),
            });
        }
        let env = given.to_vec();
        let ran = run(site, t, &env, t.restore_command.clone(), "restore")?;
        if ran.rc != 0 {
            return Err(BackupError::RestoreFailed {
                source_name: t.source.clone(),
                rc: ran.rc,
                dir: t.dir.clone(),
                tail: ran.tail,
            });
        }
    }
    for l in &list {
        remove_file(&l.stamp)?;
    }
    remove_file(&list_file)?;
    Ok(list.into_iter().rev().map(|l| l.taken).collect())
}

/// How a backup's or restore's container exited: its exit code and the tail of its output.
struct Ran {
    rc: i64,
    tail: String,
}

/// Runs `command` (the `what`: backup or restore) in the backup's container, its directory
/// mounted at MOUNT.
fn run(
    site: &Site,
    t: &Taken,
    env: &[String],
    command: Vec<String>,
    what: &str,
) -> Result<Ran, BackupError> {
    let timeout = site.timeout;
    let spec = container_of(t, env, command, what);
    match site.host.podman.run_oneoff(&spec, timeout)? {
        Finished::Exited(r) => Ok(Ran {
            rc: r.rc,
            tail: super::tail(&r.output),
        }),
        Finished::TimedOut { .. } => Err(BackupError::Timeout {
            what: format!("{}: the {what} of {}", t.source, t.dir),
            secs: timeout.as_secs(),
        }),
    }
}

/// The container that runs `command` (the `what`: backup or restore) for the backup `t`, its
/// directory mounted at MOUNT.
fn container_of(t: &Taken, env: &[String], command: Vec<String>, what: &str) -> OneOff {
    let mut volumes = t.volumes.clone();
    volumes.push(format!("{}:{MOUNT}", t.dir));
    OneOff {
        image: t.image.clone(),
        command,
        env: env.to_vec(),
        volumes,
        network: t.network.clone(),
        labels: HashMap::from([(
            "io.refit.migration".to_string(),
            format!("{}-{what}", t.source),
        )]),
    }
}

/// A new directory named so that names sort by time: `SECONDS-NANOS-SOURCE`.
fn new_dir(stream_dir: &Path, source: &str) -> Result<PathBuf, StateError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let safe: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = stream_dir.join(format!(
        "{:012}-{:09}-{safe}",
        now.as_secs(),
        now.subsec_nanos()
    ));
    private_dir(&dir)?;
    Ok(dir)
}

fn size_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Keeps the newest `keep` backups of a stream, and every one a recovery may still restore.
fn prune(stream_dir: &Path, keep: usize, listed: &[Listed]) -> Result<(), StateError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(stream_dir)
        .map_err(crate::state::io_err("read", stream_dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(RECORD).exists())
        .collect();
    dirs.sort();
    let old = dirs.len().saturating_sub(keep);
    for d in &dirs[..old] {
        let d_str = d.display().to_string();
        if listed.iter().any(|l| l.taken.dir == d_str) {
            continue;
        }
        std::fs::remove_dir_all(d).map_err(crate::state::io_err("remove", d))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
