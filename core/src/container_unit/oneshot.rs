//! A oneshot container unit that ran: `Type=oneshot` with `RemainAfterExit=yes`, as the
//! migration unit foremanctl's app `Requires=`. Its container is gone once it exited (quadlet
//! runs it with `--rm`), yet systemd keeps the service active. For the plan it counts as the
//! container it was, so a oneshot is restarted (its job run again) only for a reason a running
//! container would be restarted for: a new text, a new image, a changed input.

use crate::podman::{ContainerInfo, ContainerState};
use crate::state::UnitHistory;
use crate::systemd::UnitStatus;

/// What is known of the unit file and its past, to tell what a oneshot's last run ran.
pub struct Seen<'a> {
    /// The label of the file on disk, if refit wrote it.
    pub label: Option<&'a str>,
    /// The effective revision of the file on disk.
    pub file_revision: Option<&'a str>,
    /// When the file or one of its drop-ins last changed.
    pub changed_at: Option<i64>,
    pub history: &'a UnitHistory,
    /// The local image of the unit's reference now.
    pub image_id: Option<&'a str>,
}

/// The container a oneshot's last run had, as far as it can be told; None when it did not run.
/// The run was of the file's text (its label) when systemd made the service active after the
/// file last changed, with no reload pending; otherwise its revision is unknown, which the
/// plan treats as an old one. Its image is the one refit recorded for that revision, or else
/// the local image of its reference (a unit refit never ran: what it takes over).
pub fn ran(status: &UnitStatus, unit: &str, seen: &Seen<'_>) -> Option<ContainerInfo> {
    if !status.ran_once() {
        return None;
    }
    let started_at = status.active_since().unwrap_or(0);
    let current_text = !status.need_daemon_reload()
        && seen.changed_at.is_some_and(|changed| started_at >= changed);
    let revision = seen.label.filter(|_| current_text).map(str::to_string);
    let ran_revision = revision.as_deref().or(seen.file_revision);
    let recorded_image = seen
        .history
        .revisions
        .iter()
        .rev()
        .find(|r| Some(r.revision.as_str()) == ran_revision)
        .and_then(|r| r.image_id.clone());
    Some(ContainerInfo {
        id: String::new(),
        image_id: recorded_image
            .or_else(|| seen.image_id.map(str::to_string))
            .unwrap_or_default(),
        revision,
        unit: unit.to_string(),
        state: ContainerState::Running,
        health: None,
        started_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::RevisionRecord;

    fn status(active: &str, since: i64) -> UnitStatus {
        let props = [
            ("Type", "oneshot".to_string()),
            ("ActiveState", active.to_string()),
            ("ActiveEnterTimestamp", format!("@{since}")),
        ];
        UnitStatus {
            name: "m.service".into(),
            props: props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }

    fn seen<'a>(history: &'a UnitHistory, changed_at: i64) -> Seen<'a> {
        Seen {
            label: Some("r2"),
            file_revision: Some("r2"),
            changed_at: Some(changed_at),
            history,
            image_id: Some("new"),
        }
    }

    #[test]
    fn a_run_after_the_file_changed_ran_its_label_on_the_recorded_image() {
        let history = UnitHistory {
            revisions: vec![RevisionRecord {
                revision: "r2".into(),
                text: String::new(),
                image_ref: "fl.image".into(),
                image_id: Some("old".into()),
                recorded_at: String::new(),
                stream: None,
            }],
            ..UnitHistory::default()
        };
        let c = ran(&status("active", 200), "m.service", &seen(&history, 100)).expect("ran");
        assert_eq!(
            (c.revision.as_deref(), c.image_id.as_str()),
            (Some("r2"), "old")
        );
        assert_eq!(c.started_at, 200);
    }

    #[test]
    fn a_run_before_the_file_changed_ran_an_unknown_text() {
        let history = UnitHistory::default();
        let c = ran(&status("active", 100), "m.service", &seen(&history, 200)).expect("ran");
        assert_eq!((c.revision, c.image_id.as_str()), (None, "new"));
    }

    #[test]
    fn a_oneshot_that_is_not_active_did_not_run() {
        let history = UnitHistory::default();
        assert!(ran(&status("inactive", 100), "m.service", &seen(&history, 50)).is_none());
    }
}
