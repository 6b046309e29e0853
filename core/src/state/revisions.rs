//! The recent revisions of one unit: enough to roll back to the previous one, and the texts of
//! hand edits that refit replaced.

use super::{StateError, read_json, write_json};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How many revisions and drifted texts are kept per unit.
const KEEP: usize = 5;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RevisionRecord {
    pub revision: String,
    pub text: String,
    pub image_ref: String,
    /// The image ID this revision ran, kept so a rollback restores exactly it.
    pub image_id: Option<String>,
    pub recorded_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UnitHistory {
    /// Oldest first; the last is the revision refit last converged.
    pub revisions: Vec<RevisionRecord>,
    /// Hand-edited texts refit found on disk and replaced, oldest first.
    #[serde(default)]
    pub drift: Vec<RevisionRecord>,
}

impl UnitHistory {
    pub fn load(path: &Path) -> Result<Self, StateError> {
        Ok(read_json(path)?.unwrap_or_default())
    }

    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        write_json(path, self, 0o600)
    }

    pub fn current(&self) -> Option<&RevisionRecord> {
        self.revisions.last()
    }

    /// The revision before the current one, to roll back to.
    pub fn previous(&self) -> Option<&RevisionRecord> {
        self.revisions.iter().rev().nth(1)
    }

    /// Records a converged revision; re-recording the current one only refreshes its image.
    pub fn record(&mut self, rec: RevisionRecord) {
        if let Some(cur) = self.revisions.last_mut()
            && cur.revision == rec.revision
        {
            *cur = rec;
            return;
        }
        self.revisions.retain(|r| r.revision != rec.revision);
        self.revisions.push(rec);
        trim(&mut self.revisions);
    }

    pub fn record_drift(&mut self, rec: RevisionRecord) {
        self.drift.push(rec);
        trim(&mut self.drift);
    }
}

fn trim(v: &mut Vec<RevisionRecord>) {
    if v.len() > KEEP {
        v.drain(..v.len() - KEEP);
    }
}
