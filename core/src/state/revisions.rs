//! The recent revisions of one unit that converged: enough to roll back to what last ran, text
//! and image ID both; the revision refit last wrote, to tell a hand edit; and the texts of
//! hand edits that refit replaced.
//!
//! Only a revision that converged is recorded as one that ran. A unit written by
//! `state: present`, a hand edit or an interrupted run is never something to roll back *to*.

use super::{StateError, read_json, write_json};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How many drifted texts are kept per unit, and how many revisions when no count is given.
pub const KEEP: usize = 5;

/// The most revisions `keep_revisions` may ask for, and the bound of the list between a
/// record and the end of the run, where the run's own count trims it (`UnitHistory::keep`).
pub const MAX_KEEP: usize = 100;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RevisionRecord {
    pub revision: String,
    pub text: String,
    pub image_ref: String,
    /// The image ID this revision ran, kept so a rollback restores exactly it.
    pub image_id: Option<String>,
    pub recorded_at: String,
    /// The stream the host was on, or going to, when this revision converged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
}

impl RevisionRecord {
    /// The same revision on the same image.
    pub fn is(&self, revision: &str, image_id: Option<&str>) -> bool {
        self.revision == revision && self.image_id.as_deref() == image_id
    }

    /// What `history` prints and `rollback_to` takes: a hash of the text revision and the
    /// image ID together. The text alone would not do: every z-stream update of a unit has the
    /// same text, on a new image.
    pub fn id(&self) -> String {
        crate::unit::revision::short_hash(&format!(
            "{}@{}",
            self.revision,
            self.image_id.as_deref().unwrap_or("")
        ))
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PickError {
    #[error(
        "no kept revision of {unit} starts with {prefix:?}; the kept ones are {known} (`refitctl history` lists them)"
    )]
    Unknown {
        unit: String,
        prefix: String,
        known: String,
    },
    #[error(
        "{prefix:?} names more than one kept revision of {unit} ({matches}); give more of the revision"
    )]
    Ambiguous {
        unit: String,
        prefix: String,
        matches: String,
    },
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
    /// Image IDs refit pulled for this unit that may still be on the host: the only images
    /// refit ever removes, once no kept revision and no container uses them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pulled: Vec<String>,
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
    /// only refreshes it, keeping the stream it was first recorded on; the same text on a new
    /// image is a revision of its own, so an image-only update can be rolled back too.
    pub fn record(&mut self, mut rec: RevisionRecord) {
        if rec.stream.is_none() {
            rec.stream = self
                .revisions
                .iter()
                .find(|r| r.is(&rec.revision, rec.image_id.as_deref()))
                .and_then(|r| r.stream.clone());
        }
        self.revisions
            .retain(|r| !r.is(&rec.revision, rec.image_id.as_deref()));
        self.written = Some(rec.revision.clone());
        self.revisions.push(rec);
        trim(&mut self.revisions, MAX_KEEP);
    }

    /// Keeps the newest `n` revisions (at least one) and returns those dropped, oldest first.
    pub fn keep(&mut self, n: usize) -> Vec<RevisionRecord> {
        let n = n.clamp(1, MAX_KEEP);
        let cut = self.revisions.len().saturating_sub(n);
        self.revisions.drain(..cut).collect()
    }

    /// The kept revision whose `id` starts with `prefix`: exactly one, or an error naming the
    /// candidates.
    pub fn pick(&self, unit: &str, prefix: &str) -> Result<&RevisionRecord, PickError> {
        let found: Vec<&RevisionRecord> = self
            .revisions
            .iter()
            .filter(|r| !prefix.is_empty() && r.id().starts_with(&prefix.to_ascii_lowercase()))
            .collect();
        let ids = |rs: &mut dyn Iterator<Item = &RevisionRecord>| {
            let v: Vec<String> = rs.map(RevisionRecord::id).collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(PickError::Unknown {
                unit: unit.to_string(),
                prefix: prefix.to_string(),
                known: ids(&mut self.revisions.iter().rev()),
            }),
            many => Err(PickError::Ambiguous {
                unit: unit.to_string(),
                prefix: prefix.to_string(),
                matches: ids(&mut many.iter().copied()),
            }),
        }
    }

    /// Notes an image ID refit pulled for this unit: only such images are ever removed by it.
    pub fn note_pulled(&mut self, image_id: &str) {
        if !self.pulled.iter().any(|p| p == image_id) {
            self.pulled.push(image_id.to_string());
        }
    }

    /// Forgets a revision that failed or was rolled back from, so the next rollback goes
    /// further back instead of returning to it.
    pub fn forget(&mut self, revision: &str, image_id: Option<&str>) {
        self.revisions.retain(|r| !r.is(revision, image_id));
    }

    pub fn record_drift(&mut self, rec: RevisionRecord) {
        self.drift.push(rec);
        trim(&mut self.drift, KEEP);
    }
}

fn trim(v: &mut Vec<RevisionRecord>, keep: usize) {
    if v.len() > keep {
        v.drain(..v.len() - keep);
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
            stream: None,
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
        let dropped = h.keep(KEEP);
        let revs: Vec<_> = h.revisions.iter().map(|r| r.revision.as_str()).collect();
        assert_eq!(revs, ["r2", "r4", "r5", "r6", "r3"]);
        let gone: Vec<_> = dropped.iter().map(|r| r.revision.as_str()).collect();
        assert_eq!(gone, ["r0", "r1"]);
        h.forget("r3", Some("img"));
        assert_eq!(h.current().map(|r| r.revision.as_str()), Some("r6"));
    }

    #[test]
    fn keep_takes_its_count_and_keeps_one_at_least() {
        let mut h = UnitHistory::default();
        for i in 0..9 {
            h.record(rec("a", &format!("img{i}")));
        }
        assert_eq!(
            h.revisions.len(),
            9,
            "record bounds the list by MAX_KEEP only"
        );
        assert_eq!(h.keep(3).len(), 6);
        assert_eq!(h.keep(0).len(), 2);
        assert!(h.current().expect("one").is("a", Some("img8")));
    }

    #[test]
    fn a_re_record_keeps_the_stream_it_ran_on() {
        let mut h = UnitHistory::default();
        h.record(RevisionRecord {
            stream: Some("1.0".into()),
            ..rec("a", "img1")
        });
        h.record(rec("a", "img1"));
        assert_eq!(h.current().and_then(|r| r.stream.as_deref()), Some("1.0"));
    }

    #[test]
    fn pick_takes_a_unique_prefix_of_the_pair_and_names_the_others() {
        let mut h = UnitHistory::default();
        // The same text on three images: three revisions, told apart by their id.
        for img in ["img1", "img2", "img3"] {
            h.record(rec("a", img));
        }
        let ids: Vec<String> = h.revisions.iter().map(RevisionRecord::id).collect();
        let two = h.pick("u", &ids[1]).expect("its whole id");
        assert!(two.is("a", Some("img2")));
        let short = &ids[0][..6];
        assert!(h.pick("u", short).expect("a prefix").is("a", Some("img1")));
        match h.pick("u", "zz") {
            Err(PickError::Unknown { known, .. }) => {
                assert_eq!(known, format!("{}, {}, {}", ids[2], ids[1], ids[0]));
            }
            other => panic!("unknown prefix: {other:?}"),
        }
        assert!(matches!(h.pick("u", ""), Err(PickError::Unknown { .. })));
        // Any two ids share their empty prefix; find two that share a first character.
        let mut h2 = UnitHistory::default();
        let mut seen = std::collections::HashMap::new();
        for i in 0..40 {
            let r = rec("a", &format!("i{i}"));
            if let Some(first) = seen.insert(r.id()[..1].to_string(), r.clone()) {
                h2.record(first);
                h2.record(r.clone());
                let err = h2.pick("u", &r.id()[..1]).expect_err("two match");
                assert!(matches!(err, PickError::Ambiguous { .. }), "{err}");
                assert!(err.to_string().contains(&r.id()), "{err}");
                return;
            }
        }
        panic!("40 ids with no first character in common");
    }
}
