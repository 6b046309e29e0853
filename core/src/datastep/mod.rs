//! `data_step`: a PostgreSQL major upgrade that writes somewhere new.
//!
//! The database unit's installed text names the old image and data volume, the flow's staged
//! text the new ones. The step builds the new cluster in the new volume from the old one, which
//! it mounts read-only, then installs the staged text; the old volume is the way back, as it
//! was when its server stopped. Everything that can refuse the step (a bad parameter, an old
//! image that is gone, a downgrade, too little disk) does so before anything stops.
//!
//! The work itself is `postgresql.sh`, in two one-off containers with no network: the old image
//! makes a private copy of the old cluster, counts the named tables on it, and dumps it or
//! carries its binaries over; the new image builds the new cluster (pg_upgrade or a restore),
//! checks it and moves it into place. A marker in the new volume names the old cluster it was
//! built from, so a run cut short (a power-off) is redone from the start by the next one, and a
//! finished one is not done twice.

mod keep;
mod place;
mod run;
pub mod spec;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::StateError;
pub use keep::{PruneReport, Pruned};
pub use place::{Method, Place, Transfer};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One database unit to move to its staged major.
#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub unit: String,
    pub method: Method,
    pub transfer: Transfer,
    pub data_dir: String,
    #[serde(default)]
    pub tables: Vec<String>,
    #[serde(default)]
    pub checks: Vec<String>,
    pub analyze: String,
    /// How many old places stay once the flow verified the new one.
    pub keep: u32,
}

/// What the call does: move each unit to its staged major, or prune the old places a move
/// left beyond `keep` (the flow's verify).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Move,
    Prune,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub steps: Vec<Step>,
    pub action: Action,
    pub stage: Option<String>,
    pub stop_record: String,
    pub timeout: u64,
    pub run_id: Option<String>,
    pub quadlet_dir: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DataStepError {
    #[error(transparent)]
    Name(#[from] crate::unit::name::NameError),
    #[error(
        "steps[].tables: {0} is not DATABASE.SCHEMA.TABLE of letters, digits and '_'; name each table with its database and schema"
    )]
    Table(String),
    #[error(
        "steps[].checks: {0:?} is not DATABASE:SQL on one line; give the database, a colon, then a query that answers true"
    )]
    Check(String),
    #[error("steps[].data_dir: {0} is not an absolute path; give where the unit mounts its data")]
    DataDir(String),
    #[error("{what}: {detail}")]
    Unit { what: String, detail: String },
    #[error(
        "{unit}: the old image {image} is gone from this host; the way back runs on it, so pull or load it again (podman pull {image}) and rerun"
    )]
    OldImageGone { unit: String, image: String },
    #[error(
        "{unit}: the new image {image} is not on this host; fetch it first (the flow's preflight does)"
    )]
    NewImageMissing { unit: String, image: String },
    #[error(
        "{unit}: the staged image runs PostgreSQL {new}, older than the cluster's {old}; a downgrade cannot read the data: stay on the stream that runs {old}, or restore a dump of an older release"
    )]
    Downgrade { unit: String, old: u32, new: u32 },
    #[error(
        "{unit}: the staged text keeps the data volume {volume} while the major moves from {old} to {new}; give the new major a volume of its own (for example {volume}-{new}), so the old one stays the way back"
    )]
    SameVolume {
        unit: String,
        volume: String,
        old: u32,
        new: u32,
    },
    #[error(
        "{unit}: the staged text moves the data from {old_volume} to {new_volume} on the same major {major}; point the unit at {old_volume} again (a data step is for a new major)"
    )]
    SameMajor {
        unit: String,
        old_volume: String,
        new_volume: String,
        major: u32,
    },
    #[error(
        "{unit}: {method} needs {needed_mb} MB free beside the old cluster ({size_mb} MB), and the volumes' file system has {avail_mb} MB; free space there{hint}"
    )]
    Disk {
        unit: String,
        method: String,
        needed_mb: u64,
        size_mb: u64,
        avail_mb: u64,
        hint: &'static str,
    },
    #[error(
        "{unit}: removing the old data volume {volume} failed: {detail}; remove it by hand (podman volume rm {volume}) or raise keep"
    )]
    Prune {
        unit: String,
        volume: String,
        detail: String,
    },
    #[error("{unit}: {what} failed: {detail}")]
    Probe {
        unit: String,
        what: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Podman(#[from] crate::podman::PodmanError),
    #[error(transparent)]
    Stop(#[from] crate::stop_services::StopError),
    #[error(transparent)]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error(transparent)]
    State(#[from] StateError),
}

/// What one step did, in the module's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StepReport {
    pub unit: String,
    pub old: Option<Place>,
    pub new: Option<Place>,
    pub old_major: Option<u32>,
    pub new_major: Option<u32>,
    pub size_kb: Option<u64>,
    /// The step built the new cluster in this call.
    pub built: bool,
    /// The new volume held a cluster built from the old one as it is, by an earlier run.
    pub already: bool,
    pub stopped: Vec<String>,
    /// The staged text was installed: the unit now runs the new major on the new volume.
    pub installed: bool,
    pub duration_ms: u64,
}

/// The module's result.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub steps: Vec<StepReport>,
}

/// A table as `DATABASE.SCHEMA.TABLE`, each part a plain identifier: it is put into SQL as is.
fn plain_table(t: &str) -> bool {
    let parts: Vec<&str> = t.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| plain_identifier(p))
}

fn plain_identifier(p: &str) -> bool {
    let mut chars = p.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every parameter, judged before podman or systemd is asked anything.
pub fn validate(p: &Params) -> Result<(), DataStepError> {
    crate::stop_services::record_path(&crate::state::StateDir::new(&p.state_dir), &p.stop_record)?;
    for s in &p.steps {
        crate::unit::UnitName::parse(&s.unit)?;
        if !s.data_dir.starts_with('/') || s.data_dir.contains('\n') {
            return Err(DataStepError::DataDir(s.data_dir.clone()));
        }
        if let Some(t) = s.tables.iter().find(|t| !plain_table(t)) {
            return Err(DataStepError::Table(t.clone()));
        }
        let bad_check = |c: &&String| {
            c.contains('\n')
                || !c
                    .split_once(':')
                    .is_some_and(|(db, sql)| plain_identifier(db) && !sql.trim().is_empty())
        };
        if let Some(c) = s.checks.iter().find(bad_check) {
            return Err(DataStepError::Check(c.clone()));
        }
    }
    Ok(())
}

pub fn run_steps(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, DataStepError> {
    validate(&p)?;
    match p.action {
        Action::Move => run::run(&p, inv, host),
        Action::Prune => keep::prune(&p, inv, host),
    }
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, DataStepError> {
    // Every parameter is checked before the first podman call.
    validate(&p)?;
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    let registry = crate::registry::HttpRegistry::from_host();
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    run_steps(p, inv, &Host::real(&podman, &registry, &systemd))
}

#[cfg(test)]
mod tests;
