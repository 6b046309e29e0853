//! Stamps: the record that a migration ran, or was found not pending, for one image.

use super::Migration;
use crate::state::{StateDir, StateError, read_json, write_json};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The record of a migration that ran (or was found not pending) for one image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stamp {
    pub source: String,
    pub command: Vec<String>,
    pub image_id: String,
    /// `migrated`, or `not_pending` when the check command said so.
    pub outcome: String,
    pub recorded_at: String,
}

pub(super) fn new_stamp(source: &str, m: &Migration, image_id: &str, outcome: &str) -> Stamp {
    Stamp {
        source: source.to_string(),
        command: m.command.clone(),
        image_id: image_id.to_string(),
        outcome: outcome.to_string(),
        recorded_at: crate::time::now_rfc3339(),
    }
}

pub(super) fn stamp_key(source: &str, command: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for w in command {
        h.update([0]);
        h.update(w.as_bytes());
    }
    let safe: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = crate::unit::revision::hex(&h.finalize()[..8]);
    format!("{safe}-{digest}")
}

pub(super) fn load_stamp(path: &std::path::Path) -> Result<Option<Stamp>, StateError> {
    read_json(path)
}

pub(super) fn save_stamp(
    state: &StateDir,
    path: &std::path::Path,
    stamp: &Stamp,
) -> Result<(), StateError> {
    state.ensure_parent(path)?;
    write_json(path, stamp, 0o600)
}
