//! Checkpoints: what every unit of a flow looked like before the flow changed anything, so a
//! failure later in the flow can put back exactly that, not merely "the previous revision".
//!
//! A checkpoint is written once, by the first run that names it; a resumed run keeps the
//! original. It is removed when the flow finishes or has been rolled back to it.

use super::UnitError;
use super::observe::Observation;
use crate::state::{StateDir, is_plain_name, read_json, remove_file, write_json};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Checkpoint {
    pub units: BTreeMap<String, Entry>,
}

/// One unit before the flow: its text (None: it did not exist), the image it ran, and whether
/// any of its services ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub text: Option<String>,
    pub image_id: Option<String>,
    pub active: bool,
}

impl Entry {
    pub fn of(obs: &Observation) -> Self {
        Entry {
            text: obs.file_text.clone(),
            image_id: obs.running_image_id().or_else(|| obs.image_id.clone()),
            active: obs.services.iter().any(|s| s.active),
        }
    }
}

pub fn path(state: &StateDir, name: &str) -> Result<PathBuf, UnitError> {
    if !is_plain_name(name) {
        return Err(UnitError::BadCheckpoint(name.to_string()));
    }
    Ok(state.checkpoint(name))
}

pub fn load(state: &StateDir, name: &str) -> Result<Checkpoint, UnitError> {
    Ok(read_json(&path(state, name)?)?.unwrap_or_default())
}

/// Adds the units of `found` it does not hold yet; entries already there (an earlier,
/// interrupted run's) are the truth and stay.
pub fn merge(state: &StateDir, name: &str, found: Checkpoint) -> Result<(), UnitError> {
    let mut cp = load(state, name)?;
    let before = cp.units.len();
    for (unit, entry) in found.units {
        cp.units.entry(unit).or_insert(entry);
    }
    if cp.units.len() != before {
        let path = path(state, name)?;
        state.ensure_parent(&path)?;
        write_json(&path, &cp, 0o600)?;
    }
    Ok(())
}

pub fn remove(state: &StateDir, name: &str) -> Result<(), UnitError> {
    remove_file(&path(state, name)?)?;
    Ok(())
}
