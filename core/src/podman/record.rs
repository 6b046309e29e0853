//! What podman answered the last call that found nothing to do, kept for the next one.
//!
//! A fleet's scheduled no-op is mostly podman's API service waking (some 60 ms of a small
//! host's CPU) to answer what has not changed since the last run: which image each reference
//! names, which containers run for the units, and how their health checks went. The answers
//! are kept in the state dir, and a later call takes them instead of asking podman when every
//! mark of them still holds:
//! - the index and lock files of podman's image and container stores, which its storage
//!   library replaces or writes on every image or container made, named or removed: each
//!   file's inode, size and mtime the same, or absent as it was, or nothing is taken;
//! - each kept container's unit is active and running under the InvocationID it had, so the
//!   container is the one quadlet started then (a restart is a new invocation);
//! - each health-checked container's health is read anew from the log podman writes at every
//!   check, so an unhealthy service is refused as before.
//!
//! Whatever the record does not hold (secrets, volumes, networks, a reference not kept) is
//! still asked of podman, which then wakes as it always did. A host whose `storage.conf`
//! moves the stores keeps no record: the paths are checked against the live containers' own
//! directories before one is written.

use super::{ContainerInfo, ContainerState, Health, Inspected};
use crate::scope::Scope;
use crate::systemd::UnitStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bumped whenever the record's meaning changes: an older record is never taken.
const FORMAT: u32 = 1;

/// Where podman keeps a scope's stores, by its defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stores {
    /// Images, layers and each container's persistent directory.
    pub graph_root: PathBuf,
    /// Each container's runtime directory, where its health log is.
    pub run_root: PathBuf,
    /// The storage driver, whose name prefixes the store directories (`overlay-images`).
    pub driver: String,
}

impl Stores {
    /// podman's default stores for `scope`, with the one driver the graph root holds; None
    /// when there is no store there, or more than one driver's.
    pub fn of_scope(scope: &Scope) -> Option<Stores> {
        let (graph_root, run_root) = match scope {
            Scope::System => (
                PathBuf::from("/var/lib/containers/storage"),
                PathBuf::from("/run/containers/storage"),
            ),
            Scope::User(u) => (
                u.home.join(".local/share/containers/storage"),
                u.runtime_dir.join("containers"),
            ),
        };
        Stores::in_roots(graph_root, run_root)
    }

    fn in_roots(graph_root: PathBuf, run_root: PathBuf) -> Option<Stores> {
        let mut drivers = std::fs::read_dir(&graph_root).ok()?.filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix("-images").map(str::to_string)
        });
        let driver = drivers.next()?;
        drivers.next().is_none().then_some(Stores {
            graph_root,
            run_root,
            driver,
        })
    }

    /// The files podman's storage library replaces or writes on every image or container it
    /// makes, names or removes: each store's index (a container run with `--rm`, as quadlet's
    /// are, is in the volatile one) and its lock, where each write leaves a new token.
    fn index_files(&self) -> Vec<PathBuf> {
        let d = &self.driver;
        let images = self.graph_root.join(format!("{d}-images"));
        let containers = self.graph_root.join(format!("{d}-containers"));
        vec![
            images.join("images.json"),
            images.join("images.lock"),
            containers.join("containers.json"),
            containers.join("volatile-containers.json"),
            containers.join("containers.lock"),
        ]
    }

    /// The marks of the index files now; None when one cannot be looked at.
    pub fn marks(&self) -> Option<Vec<FileMark>> {
        self.index_files().iter().map(|p| FileMark::of(p)).collect()
    }

    fn container_dir(&self, root: &Path, id: &str) -> PathBuf {
        root.join(format!("{}-containers/{id}", self.driver))
    }

    /// True when both roots hold this container's directories: these are the stores podman
    /// uses, not ones a changed `storage.conf` left behind.
    fn hold(&self, id: &str) -> bool {
        self.container_dir(&self.graph_root, id).is_dir()
            && self.container_dir(&self.run_root, id).is_dir()
    }

    /// A container's health as its last check left it, from podman's health log.
    fn health(&self, id: &str) -> Option<Health> {
        #[derive(Deserialize)]
        struct HealthLog {
            #[serde(rename = "Status")]
            status: String,
        }
        let log = self
            .container_dir(&self.run_root, id)
            .join("healthcheck.log");
        let text = std::fs::read(log).ok()?;
        let log: HealthLog = serde_json::from_slice(&text).ok()?;
        Health::parse(&log.status)
    }
}

/// A file as `stat` sees it, or its absence: replaced, written, made or removed, it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMark {
    path: PathBuf,
    stat: Option<Stat>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl FileMark {
    /// None when the file can be neither looked at nor known to be absent.
    fn of(path: &Path) -> Option<FileMark> {
        let stat = match std::fs::metadata(path) {
            Ok(m) => Some(Stat {
                dev: m.dev(),
                ino: m.ino(),
                size: m.size(),
                mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return None,
        };
        Some(FileMark {
            path: path.to_path_buf(),
            stat,
        })
    }
}

/// A unit container as the record keeps it: what the list said, less its health, and the
/// invocation of its unit it ran under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct KeptContainer {
    id: String,
    image_id: String,
    revision: Option<String>,
    unit: String,
    started_at: i64,
    invocation: String,
    health_checked: bool,
}

/// What podman answered, for `Podman::adopt`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers {
    /// Each reference asked after: its image, or None when it named no local image.
    pub images: BTreeMap<String, Option<Inspected>>,
    /// Every unit container.
    pub containers: Vec<ContainerInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodmanRecord {
    format: u32,
    stores: Stores,
    marks: Vec<FileMark>,
    images: BTreeMap<String, Option<Inspected>>,
    containers: Vec<KeptContainer>,
}

impl PodmanRecord {
    /// The record of `answers`, taken while the stores bore `marks` (read before podman was
    /// asked, so a change made while it answered shows as a changed mark next time); None
    /// when they do not make one that a later call could check: a container not running, or
    /// stores that are not where podman keeps them.
    pub fn of(
        stores: &Stores,
        marks: Vec<FileMark>,
        answers: Answers,
        units: &[UnitStatus],
    ) -> Option<PodmanRecord> {
        let containers = answers
            .containers
            .into_iter()
            .map(|c| {
                let status = units.iter().find(|st| st.name == c.unit)?;
                (c.running() && stores.hold(&c.id) && running(status)).then(|| KeptContainer {
                    invocation: status.invocation_id().to_string(),
                    health_checked: c.health.is_some(),
                    id: c.id,
                    image_id: c.image_id,
                    revision: c.revision,
                    unit: c.unit,
                    started_at: c.started_at,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        (!containers.is_empty()).then(|| PodmanRecord {
            format: FORMAT,
            stores: stores.clone(),
            marks,
            images: answers.images,
            containers,
        })
    }

    /// The units whose state `adoptable` needs.
    pub fn units(&self) -> Vec<String> {
        self.containers.iter().map(|c| c.unit.clone()).collect()
    }

    /// The answers to take instead of podman's, when every mark holds: the same stores, their
    /// index files unchanged, each unit on the invocation its container ran under, and each
    /// health check's log readable.
    pub fn adoptable(&self, stores: &Stores, units: &[UnitStatus]) -> Option<Answers> {
        if self.format != FORMAT || &self.stores != stores || stores.marks()? != self.marks {
            return None;
        }
        let containers = self
            .containers
            .iter()
            .map(|c| {
                let status = units.iter().find(|st| st.name == c.unit)?;
                if !running(status) || status.invocation_id() != c.invocation {
                    return None;
                }
                let health = if c.health_checked {
                    Some(stores.health(&c.id)?)
                } else {
                    None
                };
                Some(ContainerInfo {
                    id: c.id.clone(),
                    image_id: c.image_id.clone(),
                    revision: c.revision.clone(),
                    unit: c.unit.clone(),
                    state: ContainerState::Running,
                    health,
                    started_at: c.started_at,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Answers {
            images: self.images.clone(),
            containers,
        })
    }
}

/// A unit whose container runs now: active, its main process running.
fn running(status: &UnitStatus) -> bool {
    status.active_state() == "active"
        && status.get("SubState") == "running"
        && !status.invocation_id().is_empty()
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
