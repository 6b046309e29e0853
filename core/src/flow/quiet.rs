//! A flow call's use of the record podman's answers leave (`podman::record`): taken, before
//! podman is asked anything, when its marks hold; kept by a call that found nothing to do.

use super::Params;
use crate::host::Host;
use crate::podman::record::{FileMark, PodmanRecord, Stores};
use crate::scope::Scope;
use crate::state::{StateDir, read_json, write_json};

/// What the call knew of podman's stores before it asked podman anything.
#[derive(Debug, Default)]
pub struct Quiet {
    stores: Option<Stores>,
    /// The index files' marks as they were before podman answered.
    marks: Option<Vec<FileMark>>,
    /// True when podman's answers came from the record: podman was not asked for them.
    pub adopted: bool,
}

impl Quiet {
    /// Takes the record's answers as podman's when its marks hold, for a call given units to
    /// plan. A record that cannot be read is only a record not taken: podman is asked, and
    /// the call keeps a new one.
    pub fn look(p: &Params, state: &StateDir, scope: &Scope, host: &Host) -> Quiet {
        if !super::plan::wanted(p) {
            return Quiet::default();
        }
        let Some(stores) = Stores::of_scope(scope) else {
            return Quiet::default();
        };
        let marks = stores.marks();
        let record: Option<PodmanRecord> = read_json(&state.podman_record()).ok().flatten();
        let answers = record.and_then(|r| {
            let units = host.systemd.show(&r.units()).ok()?;
            r.adoptable(&stores, &units)
        });
        let adopted = answers.is_some();
        if let Some(answers) = answers {
            host.podman.adopt(answers);
        }
        Quiet {
            stores: Some(stores),
            marks,
            adopted,
        }
    }

    /// After a call that found nothing to do: keeps what podman answered it, for the next.
    /// A record taken holds still and is left as it is. Failing to keep one only leaves the
    /// next call to ask podman, so it fails nothing.
    pub fn keep(self, state: &StateDir, host: &Host) {
        let (false, Some(stores), Some(marks)) = (self.adopted, self.stores, self.marks) else {
            return;
        };
        let Some(answers) = host.podman.answers() else {
            return;
        };
        let units: Vec<String> = answers.containers.iter().map(|c| c.unit.clone()).collect();
        let Ok(statuses) = host.systemd.show(&units) else {
            return;
        };
        if let Some(record) = PodmanRecord::of(&stores, marks, answers, &statuses) {
            let _ = write_json(&state.podman_record(), &record, 0o600);
        }
    }
}
