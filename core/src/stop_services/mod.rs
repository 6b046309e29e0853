//! `stop_services`: stop exactly what must stop, in reverse dependency order, and record what
//! was active so `restored` brings back exactly that set.
//!
//! The record is written *before* anything stops, and a later stop merges into it, so a run
//! killed half-way still restores everything that ran before it.

mod engine;
mod expand;
mod order;
pub mod spec;

use crate::ansible::{Invocation, Outcome};
use crate::results::stop_services::StopResult;
use crate::state::{StateDir, StateError, is_plain_name, read_json, remove_file, write_json};
use crate::systemd::{Systemd, SystemdError, UnitStatus};
use crate::time::Clock;
use crate::unit::name::{NameError, validate_systemd_unit};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use engine::{
    StartLimit, Started, StopOptions, Stopped, record_stop, start_set, start_set_at_once,
    stop_at_once, stop_recorded, stop_recorded_set, stop_set,
};
use expand::check_missing;
pub use expand::going_with;
pub use order::{start_order, stop_order};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    Stopped,
    Restored,
    Started,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(default)]
    pub services: Vec<String>,
    pub state: Wanted,
    pub dependents: bool,
    pub timeout: u64,
    pub missing_ok: bool,
    pub record: String,
    /// The flow run this call is part of.
    #[serde(default)]
    pub run_id: Option<String>,
    pub state_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("the services list is empty; name at least one unit to stop")]
    Empty,
    #[error("unit {0} does not exist; check the name, or set missing_ok: true to skip it")]
    Missing(String),
    #[error(
        "{dependents} would be stopped too, since they depend on {units}; set dependents: true to stop them in order and restore them later"
    )]
    ActiveDependents { units: String, dependents: String },
    #[error("record name {0:?} must be a plain name: letters, digits, - and _")]
    BadRecord(String),
    #[error(
        "still not {wanted} after {secs} s: {units}; look at `systemctl status {first}` and raise timeout if it is just slow"
    )]
    Timeout {
        wanted: &'static str,
        secs: u64,
        units: String,
        first: String,
    },
    #[error("{unit} did not start: {why}.\nJournal of {unit}:\n{journal}")]
    StartFailed {
        unit: String,
        why: String,
        journal: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Systemd(#[from] SystemdError),
}

/// What a stop leaves behind for `restored`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StopRecord {
    pub active_before: Vec<String>,
    pub recorded_at: String,
}

/// The seams `stop_services` needs: systemd and a clock, no podman.
pub struct Host<'a> {
    pub systemd: &'a dyn Systemd,
    pub clock: &'a dyn Clock,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, StopError> {
    let t0 = Instant::now();
    let start = host.clock.now();
    if p.record.is_empty()
        || !p
            .record
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(StopError::BadRecord(p.record));
    }
    let names = p
        .services
        .iter()
        .map(|s| unit_name(s))
        .collect::<Result<Vec<_>, _>>()?;
    let state = StateDir::new(&p.state_dir);
    let record_path = record_path(&state, &p.record)?;
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run(
            &format!("stop_services {}", p.record),
            p.run_id.as_deref(),
            host.clock,
        )?)
    };
    let deadline = Duration::from_secs(p.timeout);
    let mut report = StopResult {
        record: record_path.display().to_string(),
        ..StopResult::default()
    };
    let mut warnings = Vec::new();
    let changed = match p.state {
        Wanted::Stopped => {
            if names.is_empty() {
                return Err(StopError::Empty);
            }
            let how = StopOptions {
                dependents: p.dependents,
                missing_ok: p.missing_ok,
                check: inv.check_mode,
                start,
                deadline,
            };
            let stopped = stop_set(host, &state, &record_path, &names, &how)?;
            report.order = stopped.order;
            report.already_inactive = stopped.already_inactive;
            let active = stopped.stopped;
            report.stopped = active;
            !report.stopped.is_empty()
        }
        Wanted::Restored | Wanted::Started => {
            let wanted = if p.state == Wanted::Restored {
                match load_record(&record_path)? {
                    Some(r) => r.active_before,
                    None => Vec::new(),
                }
            } else {
                names
            };
            let set = host.systemd.show(&wanted)?;
            if p.state == Wanted::Restored {
                // A unit removed since the stop cannot come back; that is worth a word, not a failure.
                for gone in set.iter().filter(|s| !s.exists()) {
                    warnings.push(format!(
                        "{} ran before the stop but no longer exists, so it was not restored",
                        gone.name
                    ));
                }
            } else {
                check_missing(&set, p.missing_ok)?;
            }
            let set: Vec<UnitStatus> = set.into_iter().filter(UnitStatus::exists).collect();
            let started = start_set(
                host,
                &set,
                inv.check_mode,
                StartLimit::Reset,
                start,
                deadline,
            )?;
            if !inv.check_mode && p.state == Wanted::Restored {
                remove_file(&record_path)?;
            }
            report.order = started.order;
            report.already_active = started.already_active;
            report.started = started.started;
            !report.started.is_empty()
        }
    };
    report.duration_ms = t0.elapsed().as_millis() as u64;
    let verb = if inv.check_mode { "would " } else { "" };
    let msg = match (p.state, changed) {
        (_, false) => "nothing to do: every unit is already as wanted".to_string(),
        (Wanted::Stopped, true) => format!("{verb}stop {}", report.stopped.join(", ")),
        (_, true) => format!("{verb}start {}", report.started.join(", ")),
    };
    let mut out = Outcome::new(changed, msg).with_data(&report);
    out.warnings = warnings;
    Ok(out)
}

/// The path of the stop record `name`, which must be a plain name.
pub fn record_path(state: &StateDir, name: &str) -> Result<std::path::PathBuf, StopError> {
    if !is_plain_name(name) {
        return Err(StopError::BadRecord(name.to_string()));
    }
    Ok(state.stop_record(name))
}

fn unit_name(raw: &str) -> Result<String, NameError> {
    validate_systemd_unit(raw)?;
    Ok(crate::unit::name::service_name(raw))
}

fn load_record(path: &std::path::Path) -> Result<Option<StopRecord>, StateError> {
    read_json(path)
}

fn save_record(path: &std::path::Path, rec: &StopRecord) -> Result<(), StateError> {
    write_json(path, rec, 0o600)
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, StopError> {
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    let host = Host {
        systemd: &systemd,
        clock: &crate::time::SystemClock,
    };
    run(p, inv, &host)
}

#[cfg(test)]
mod tests;
