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
use crate::state::{StateDir, StateError, is_plain_name, read_json, remove_file, write_json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

/// A backup listed for the run's recovery, with the stamp of the migration that followed it: a
/// restore removes that stamp, so the schema put back is judged (and migrated) again.
#[derive(Debug, Serialize, Deserialize)]
struct Listed {
    #[serde(flatten)]
    taken: Taken,
    stamp: PathBuf,
}

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
        ImageRef::parse(&self.image)
            .map_err(|e| BackupError::BadImage(self.image.clone(), e.to_string()))?;
        Ok(())
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

/// Takes one backup for the migration `source`, records it, lists it for the run's recovery
/// and prunes its stream.
pub fn take(
    b: &Backup,
    source: &str,
    stamp: &Path,
    host: &Host,
    state: &StateDir,
    record: &str,
    timeout: Duration,
) -> Result<Taken, BackupError> {
    let t0 = Instant::now();
    let stream_dir = state.ensure_parent(&state.backups_dir(&b.stream).join("record"))?;
    let dir = new_dir(&stream_dir, source)?;
    let env: Vec<String> = b
        .env
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect();
    let mut taken = Taken {
        source: source.to_string(),
        stream: b.stream.clone(),
        dir: dir.display().to_string(),
        image: b.image.clone(),
        volumes: b.volumes.clone(),
        network: b.network.clone(),
        env,
        restore_command: b.restore_command.clone(),
        created_at: crate::time::now_rfc3339(),
        duration_ms: 0,
        size_bytes: 0,
    };
    let rc = run(host, &taken, b.command.clone(), "backup", timeout)?;
    if rc.0 != 0 {
        return Err(BackupError::BackupFailed {
            source_name: source.to_string(),
            rc: rc.0,
            dir: taken.dir,
            tail: rc.1,
        });
    }
    taken.size_bytes = size_of(&dir);
    taken.duration_ms = t0.elapsed().as_millis() as u64;
    write_json(&dir.join(RECORD), &taken, 0o600)?;
    let list_file = list_path(state, record);
    let mut list: Vec<Listed> = read_json(&list_file)?.unwrap_or_default();
    list.push(Listed {
        taken: taken.clone(),
        stamp: stamp.to_path_buf(),
    });
    write_json(&list_file, &list, 0o600)?;
    prune(&stream_dir, b.keep, &list)?;
    Ok(taken)
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
    host: &Host,
    state: &StateDir,
    record: &str,
    stop_record: &Path,
    timeout: Duration,
) -> Result<Vec<Taken>, BackupError> {
    let list_file = list_path(state, record);
    if !stop_record.exists() {
        return Ok(Vec::new());
    }
    let list: Vec<Listed> = read_json(&list_file)?.unwrap_or_default();
    for t in list.iter().rev().map(|l| &l.taken) {
        let (rc, tail) = run(host, t, t.restore_command.clone(), "restore", timeout)?;
        if rc != 0 {
            return Err(BackupError::RestoreFailed {
                source_name: t.source.clone(),
                rc,
                dir: t.dir.clone(),
                tail,
            });
        }
    }
    for l in &list {
        remove_file(&l.stamp)?;
    }
    remove_file(&list_file)?;
    Ok(list.into_iter().rev().map(|l| l.taken).collect())
}

/// Runs `command` in the backup's container, its directory mounted at MOUNT: (rc, output tail).
fn run(
    host: &Host,
    t: &Taken,
    command: Vec<String>,
    what: &str,
    timeout: Duration,
) -> Result<(i64, String), BackupError> {
    let mut volumes = t.volumes.clone();
    volumes.push(format!("{}:{MOUNT}", t.dir));
    let spec = OneOff {
        image: t.image.clone(),
        command,
        env: t.env.clone(),
        volumes,
        network: t.network.clone(),
        labels: HashMap::from([(
            "io.refit.migration".to_string(),
            format!("{}-{what}", t.source),
        )]),
    };
    match host.podman.run_oneoff(&spec, timeout)? {
        Finished::Exited(r) => Ok((r.rc, super::tail(&r.output))),
        Finished::TimedOut { .. } => Err(BackupError::Timeout {
            what: format!("{}: the {what} of {}", t.source, t.dir),
            secs: timeout.as_secs(),
        }),
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
    std::fs::create_dir_all(&dir).map_err(crate::state::io_err("create", &dir))?;
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
mod tests {
    use super::*;
    use crate::ansible::Invocation;
    use crate::migrate::{Params, run};
    use crate::testing::{FakeClock, FakePodman, FakeQuadlet, FakeRegistry, FakeSystemd};
    use serde_json::json;

    struct Bed {
        dir: tempfile::TempDir,
        podman: FakePodman,
    }

    impl Bed {
        fn new() -> Bed {
            let dir = tempfile::tempdir().expect("tempdir");
            let q = dir.path().join("quadlet");
            std::fs::create_dir_all(&q).expect("mkdir");
            std::fs::write(q.join("api.container"), "[Container]\nImage=pulp:2\n").expect("write");
            let mut podman = FakePodman::default();
            podman.images.insert("pulp:2".into(), "img-2".into());
            Bed { dir, podman }
        }
        fn state(&self) -> StateDir {
            StateDir::new(self.dir.path().join("state"))
        }
        fn stop_record(&self) -> PathBuf {
            self.dir.path().join("state/stops/upgrade.json")
        }
        /// One run_migrations call, as the flow makes it, with `extra` parameters.
        fn call(
            &self,
            extra: serde_json::Value,
        ) -> Result<crate::ansible::Outcome, crate::migrate::MigrateError> {
            let mut a = json!({
                "migrations": [{
                    "unit": "api", "command": ["pulpcore-manager", "migrate"],
                    "backup": {
                        "image": "pg:17", "network": "host", "stream": "s3_122", "keep": 2,
                        "command": ["pg_dump", "-f", "/backup/db.dump"],
                        "restore_command": ["pg_restore", "/backup/db.dump"],
                    },
                }],
                "stop_first": true, "stop_record": "upgrade", "timeout": 5,
                "quadlet_dir": self.dir.path().join("quadlet"),
                "state_dir": self.dir.path().join("state"), "podman_socket": "/none",
            });
            for (k, v) in extra.as_object().expect("object") {
                a[k] = v.clone();
            }
            let p: Params = serde_json::from_value(a).expect("params");
            // Loaded and stopped already: the stop has nothing to wait for, and records the set.
            let mut systemd = FakeSystemd::with_active("api.service", "inv-1");
            if let Some(u) = systemd.units.get_mut("api.service") {
                u.props.insert("ActiveState".into(), "inactive".into());
                u.props.insert("SubState".into(), "dead".into());
            }
            let (registry, clock) = (FakeRegistry::default(), FakeClock::default());
            let host = Host {
                systemd: &systemd,
                podman: &self.podman,
                registry: &registry,
                clock: &clock,
                quadlet: &FakeQuadlet::default(),
            };
            run(p, &Invocation::default(), &host)
        }
        fn commands(&self) -> Vec<String> {
            self.podman
                .oneoffs
                .lock()
                .expect("oneoffs")
                .iter()
                .map(|o| o.command.join(" "))
                .collect()
        }
        /// Stands for the stop record a flow's stop wrote and its finish removes.
        fn set_unfinished(&self, unfinished: bool) {
            if unfinished {
                std::fs::create_dir_all(self.stop_record().parent().expect("dir")).expect("mkdir");
                let record = r#"{"active_before": ["api.service"], "recorded_at": "t"}"#;
                std::fs::write(self.stop_record(), record).expect("write");
            } else {
                let _ = std::fs::remove_file(self.stop_record());
            }
        }
    }

    #[test]
    fn a_pending_migration_is_backed_up_first_into_a_recorded_dir_and_restored_once() {
        let bed = Bed::new();
        let out = bed.call(json!({})).expect("run");
        assert_eq!(
            bed.commands(),
            ["pg_dump -f /backup/db.dump", "pulpcore-manager migrate"]
        );
        let backup_run = bed.podman.oneoffs.lock().expect("oneoffs")[0].clone();
        assert_eq!(backup_run.image, "pg:17");
        assert_eq!(backup_run.network.as_deref(), Some("host"));
        let mount = backup_run.volumes.last().expect("mount").clone();
        assert!(
            mount.ends_with(":/backup") && mount.contains("/backups/s3_122/"),
            "{mount}"
        );
        let dir = mount.trim_end_matches(":/backup").to_string();
        let record: Taken = read_json(&Path::new(&dir).join(RECORD))
            .expect("read")
            .expect("record");
        assert_eq!(
            (record.source.as_str(), record.stream.as_str()),
            ("api.service", "s3_122")
        );
        let data = serde_json::to_value(&out.data).expect("data");
        assert_eq!(data["migrations"][0]["backup"]["dir"], json!(dir), "{data}");

        // The run is unfinished (its stop record is there): the recovery restores, then only once.
        bed.set_unfinished(true);
        let stamp = PathBuf::from(data["migrations"][0]["stamp"].as_str().expect("stamp"));
        assert!(stamp.exists());
        let restored = bed.call(json!({"restore": true})).expect("restore");
        // The schema put back is judged pending again, not skipped by the stamp of the undone one.
        assert!(!stamp.exists());
        assert!(restored.changed, "{}", restored.msg);
        assert_eq!(
            bed.commands().last().map(String::as_str),
            Some("pg_restore /backup/db.dump")
        );
        let again = bed.call(json!({"restore": true})).expect("restore");
        assert!(
            !again.changed && again.msg.contains("no backup to restore"),
            "{}",
            again.msg
        );
        assert_eq!(bed.commands().len(), 3);
    }

    #[test]
    fn a_finished_run_s_backup_is_never_restored_by_a_later_failure() {
        let bed = Bed::new();
        bed.call(json!({})).expect("run");
        // The flow finished: its stop record is gone.
        bed.set_unfinished(false);
        let out = bed.call(json!({"restore": true})).expect("restore");
        assert!(!out.changed, "{}", out.msg);
        // A later run of the same flow stops again, with the old list still on disk: its next
        // backup starts a new list, so only what this run took is restored.
        let list: Vec<Listed> = read_json(&list_path(&bed.state(), "upgrade"))
            .expect("read")
            .unwrap_or_default();
        assert_eq!(list.len(), 1);
        forget_finished(&bed.state(), "upgrade", &bed.stop_record()).expect("forget");
        assert!(!list_path(&bed.state(), "upgrade").exists());
    }

    #[test]
    fn a_failed_backup_stops_the_run_before_the_migration() {
        let mut bed = Bed::new();
        bed.podman.oneoff_rc = 1;
        let err = bed.call(json!({})).expect_err("refused");
        assert!(
            err.to_string()
                .contains("the backup command exited 1, so the migration did not run"),
            "{err}"
        );
        assert_eq!(bed.commands(), ["pg_dump -f /backup/db.dump"]);
    }

    #[test]
    fn each_stream_keeps_its_newest_backups_and_any_a_recovery_may_restore() {
        let bed = Bed::new();
        let stream = bed.dir.path().join("state/backups/s3_122");
        std::fs::create_dir_all(&stream).expect("mkdir");
        let mk = |name: &str| {
            let d = stream.join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join(RECORD), "{}").expect("write");
            d
        };
        let (a, b, c) = (
            mk("000000000001-0-api"),
            mk("000000000002-0-api"),
            mk("000000000003-0-api"),
        );
        let listed = Taken {
            source: "api".into(),
            stream: "s3_122".into(),
            dir: a.display().to_string(),
            image: "pg:17".into(),
            volumes: vec![],
            network: None,
            env: vec![],
            restore_command: vec!["r".into()],
            created_at: String::new(),
            duration_ms: 0,
            size_bytes: 0,
        };
        let listed = Listed {
            taken: listed,
            stamp: PathBuf::from("/nonexistent"),
        };
        prune(&stream, 1, std::slice::from_ref(&listed)).expect("prune");
        assert!(a.exists() && !b.exists() && c.exists());
    }

    #[test]
    fn bad_backup_parameters_are_refused_by_name() {
        let bed = Bed::new();
        let cases = [
            (
                json!({"command": []}),
                "migrations[0].backup: command is an empty list",
            ),
            (
                json!({"stream": "../x"}),
                "migrations[0].backup: stream \"../x\" is not a plain name",
            ),
            (json!({"keep": 0}), "migrations[0].backup: keep is 0"),
        ];
        for (change, needle) in cases {
            let mut b = json!({
                "image": "pg:17", "command": ["d"], "restore_command": ["r"],
            });
            for (k, v) in change.as_object().expect("object") {
                b[k] = v.clone();
            }
            let err = bed
                .call(json!({"migrations": [{"unit": "api", "command": ["m"], "backup": b}]}))
                .expect_err("refused");
            assert!(err.to_string().contains(needle), "{change}: {err}");
        }
        let err = bed.call(json!({"stop_first": false})).expect_err("refused");
        assert!(err.to_string().contains("backup needs stop_first"), "{err}");
        assert!(bed.commands().is_empty());
    }
}
