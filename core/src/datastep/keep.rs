//! `keep`: the old data volumes a unit's data steps left, and how many stay once the flow has
//! verified the new one.
//!
//! A step records the old place before it installs the unit's new text (`STATE_DIR/data-steps/
//! UNIT.json`, newest last), so a power-off between the two leaves a record of a volume still in
//! use, never a volume in use that no record names. The flow's verify then calls the module
//! with `action: prune`, which removes all but the newest `keep` of them. The volume the unit's
//! installed text mounts is never removed, whatever the record says: it is the data.

use super::place::{self, Place};
use super::{DataStepError, Params};
use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::{StateDir, StateError};
use crate::unit::UnitName;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The dir of the records under the state dir.
const DIR: &str = "data-steps";

/// The old places of one unit, oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub old: Vec<Place>,
}

fn path(state: &StateDir, unit_file: &str) -> PathBuf {
    state.root().join(DIR).join(format!("{unit_file}.json"))
}

fn load(state: &StateDir, unit_file: &str) -> Result<Record, StateError> {
    Ok(crate::state::read_json(&path(state, unit_file))?.unwrap_or_default())
}

fn save(state: &StateDir, unit_file: &str, record: &Record) -> Result<(), StateError> {
    state.ensure(DIR)?;
    crate::state::write_json(&path(state, unit_file), record, 0o600)
}

/// Notes `old` as the newest old place of `unit_file` (once: a rerun that finishes a step
/// notes the same place again).
pub fn note(state: &StateDir, unit_file: &str, old: &Place) -> Result<(), StateError> {
    let mut record = load(state, unit_file)?;
    record.old.retain(|p| p.volume != old.volume);
    record.old.push(old.clone());
    save(state, unit_file, &record)
}

/// What a prune did to one unit's old places.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pruned {
    pub unit: String,
    pub removed: Vec<String>,
    pub kept: Vec<String>,
}

/// The result of a prune.
#[derive(Debug, Default, Serialize)]
pub struct PruneReport {
    pub pruned: Vec<Pruned>,
}

/// Removes, for each step, the old places beyond its `keep` newest.
pub fn prune(p: &Params, inv: &Invocation, host: &Host) -> Result<Outcome, DataStepError> {
    let state = StateDir::new(&p.state_dir);
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run("data_step", p.run_id.as_deref(), host.clock)?)
    };
    let mut pruned = Vec::with_capacity(p.steps.len());
    let mut warnings = Vec::new();
    for s in &p.steps {
        let name = UnitName::parse(&s.unit)?;
        let file = name.file_name();
        let mut record = load(&state, &file)?;
        let in_use = match crate::state::read_optional(&p.quadlet_dir.join(&file))? {
            Some(text) => {
                Some(place::of_text(&text, &s.data_dir, &format!("installed {file}"))?.volume)
            }
            None => None,
        };
        record.old.retain(|o| Some(&o.volume) != in_use.as_ref());
        let cut = record.old.len().saturating_sub(s.keep as usize);
        let mut report = Pruned {
            unit: name.service(),
            kept: record.old[cut..].iter().map(|o| o.volume.clone()).collect(),
            ..Pruned::default()
        };
        // A copy: the record loses each one only once it is gone.
        let beyond: Vec<Place> = record.old[..cut].to_vec();
        for old in beyond {
            if inv.check_mode {
                report.removed.push(old.volume);
                continue;
            }
            // The run is recorded by now: a volume that will not go is said, and left on
            // record for the next verify, rather than failing an upgrade that succeeded.
            if let Err(detail) = remove(host, &old.volume) {
                warnings.push(
                    DataStepError::Prune {
                        unit: report.unit.clone(),
                        volume: old.volume.clone(),
                        detail,
                    }
                    .to_string(),
                );
                report.kept.insert(0, old.volume);
                continue;
            }
            // One removal at a time in the record: an interruption leaves it true.
            record.old.retain(|o| o.volume != old.volume);
            save(&state, &file, &record)?;
            report.removed.push(old.volume);
        }
        pruned.push(report);
    }
    let removed: Vec<String> = pruned
        .iter()
        .flat_map(|r| r.removed.iter().map(|v| format!("{}: {v}", r.unit)))
        .collect();
    let msg = if removed.is_empty() {
        "no old data volume beyond keep".to_string()
    } else {
        format!("removed the old data volumes {}", removed.join(", "))
    };
    let mut outcome = Outcome::new(!removed.is_empty(), msg).with_data(PruneReport { pruned });
    outcome.warnings = warnings;
    Ok(outcome)
}

/// A podman volume goes through podman; a host path (an absolute `Volume=` source) is the
/// old data dir itself, removed with its contents.
fn remove(host: &Host, volume: &str) -> Result<(), String> {
    if volume.starts_with('/') {
        match std::fs::remove_dir_all(Path::new(volume)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
            _ => Ok(()),
        }
    } else {
        host.podman.remove_volume(volume).map_err(|e| e.to_string())
    }
}
