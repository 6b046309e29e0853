//! The recent revisions of one unit that converged: enough to roll back to what last ran, text
//! and image ID both; the revision refit last wrote, to tell a hand edit; and the texts of
//! hand edits that refit replaced.
//!
//! Only a revision that converged is recorded as one that ran. A unit written by
//! `state: present`, a hand edit or an interrupted run is never something to roll back *to*.

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

impl RevisionRecord {
    /// The same revision on the same image.
    pub fn is(&self, revision: &str, image_id: Option<&str>) -> bool {
        self.revision == revision && self.image_id.as_deref() == image_id
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UnitHistory {
    /// Revisions that converged, oldest first; the last is what refit last saw run.
    pub revisions: Vec<RevisionRecord>,
    /// The revision refit last wrote to disk, converged or not; a file with any other revision
    /// was edited by hand.
    #[serde(default)]
    pub written: Option<String>,
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

    /// The revision that last converged.
    pub fn current(&self) -> Option<&RevisionRecord> {
        self.revisions.last()
    }

    /// The revision refit last wrote: what a file on disk should be, unless edited by hand.
    pub fn written_revision(&self) -> Option<&str> {
        self.written
            .as_deref()
            .or_else(|| self.current().map(|r| r.revision.as_str()))
    }

    /// The newest revision that converged and is not `revision` on `image_id`: what to go back
    /// to when that one failed, or is to be rolled back.
    pub fn last_other_than(
        &self,
        revision: &str,
        image_id: Option<&str>,
    ) -> Option<&RevisionRecord> {
        self.revisions
            .iter()
            .rev()
            .find(|r| !r.is(revision, image_id))
    }

    /// Records a revision that converged. Re-recording the current one (same text and image)
    /// only refreshes it; the same text on a new image is a revision of its own, so an
    /// image-only update can be rolled back too.
    pub fn record(&mut self, rec: RevisionRecord) {
        self.revisions
            .retain(|r| !r.is(&rec.revision, rec.image_id.as_deref()));
        self.written = Some(rec.revision.clone());
        self.revisions.push(rec);
        trim(&mut self.revisions);
    }

    /// Forgets a revision that failed or was rolled back from, so the next rollback goes
    /// further back instead of returning to it.
    pub fn forget(&mut self, revision: &str, image_id: Option<&str>) {
        self.revisions.retain(|r| !r.is(revision, image_id));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(revision: &str, image: &str) -> RevisionRecord {
        RevisionRecord {
            revision: revision.into(),
            text: format!("text of {revision}"),
            image_ref: "svc:1".into(),
            image_id: Some(image.into()),
            recorded_at: String::new(),
        }
    }

    #[test]
    fn an_image_only_update_keeps_the_old_image_to_go_back_to() {
        let mut h = UnitHistory::default();
        h.record(rec("a", "img1"));
        h.record(rec("a", "img2"));
        let back = h.last_other_than("a", Some("img2")).expect("a on img1");
        assert!(back.is("a", Some("img1")));
    }

    #[test]
    fn a_written_revision_is_not_one_that_ran() {
        let mut h = UnitHistory::default();
        h.record(rec("a", "img1"));
        h.written = Some("b".into());
        assert_eq!(h.written_revision(), Some("b"));
        assert!(h.current().expect("a").is("a", Some("img1")));
        assert!(
            h.last_other_than("b", Some("img1"))
                .expect("a")
                .is("a", Some("img1"))
        );
    }

    #[test]
    fn re_recording_moves_a_revision_to_the_end_and_keep_bounds_the_list() {
        let mut h = UnitHistory::default();
        for i in 0..7 {
            h.record(rec(&format!("r{i}"), "img"));
        }
        h.record(rec("r3", "img"));
        let revs: Vec<_> = h.revisions.iter().map(|r| r.revision.as_str()).collect();
        assert_eq!(revs, ["r2", "r4", "r5", "r6", "r3"]);
        h.forget("r3", Some("img"));
        assert_eq!(h.current().map(|r| r.revision.as_str()), Some("r6"));
    }
}
