//! A unit's leftover one-offs, from a run killed while its one-off ran: which one to adopt (its
//! answer is the migration's) and which to remove before a new one is created (oneoff.rs).

use super::ContainerState;
use super::api::Listed;

/// The label that names a one-off's work: its image, command and volumes (`OneOff::key`).
pub(super) const KEY_LABEL: &str = "io.refit.migration.key";

/// What to do with a unit's leftover one-offs before a new one: the one to adopt, if any, and
/// the rest to remove.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Sweep {
    pub(super) adopt: Option<String>,
    /// The exit the adopted one recorded, when it had ended: its answer, with nothing to wait
    /// for (a wait on a leftover that ended before a boot finds no exit code in podman's
    /// database, seen on the testbed after a power-off, while the list still carries it).
    pub(super) adopted_exit: Option<i64>,
    pub(super) remove: Vec<String>,
    /// Leftovers of other work that still run: removing one would stop that work halfway (a
    /// migration, say, whose next run's check comes first).
    pub(super) still_running: Vec<String>,
}

/// Sorts the leftovers: the first one of the same work (`key`) that has an answer to wait for is
/// adopted; one of other work that still runs is left alone; every other one, never-started
/// ones of the same work included, is removed.
pub(super) fn sweep(listed: Vec<Listed>, key: &str) -> Sweep {
    let mut out = Sweep::default();
    for c in listed {
        let same = c
            .labels
            .as_ref()
            .and_then(|l| l.get(KEY_LABEL))
            .is_some_and(|k| k == key);
        if same && out.adopt.is_none() && has_an_answer(&c) {
            out.adopted_exit = recorded_exit(&c);
            out.adopt = Some(c.id);
        } else if !same && still_runs(&c) {
            out.still_running.push(c.id);
        } else {
            out.remove.push(c.id);
        }
    }
    out
}

/// True when waiting for a leftover gives the migration's own answer: it still runs (or is
/// stopping) in this boot, or it ended with its exit recorded and no signal ended it (a
/// power-off stopped it: its exit is not the migration's). A created, configured or initialized
/// one never ran; any other state (paused, dead, one refit does not know) gives no exit that
/// waiting would bring. A container that was running when the host lost power before conmon
/// recorded its exit is listed after the boot as exited with code 0 and no exit recorded: that
/// 0 is no answer, and the migration may have stopped halfway.
fn has_an_answer(c: &Listed) -> bool {
    match ContainerState::parse(&c.state) {
        ContainerState::Running => true,
        ContainerState::NotRunning(s) => match s.as_str() {
            "stopping" => true,
            "stopped" | "exited" => recorded_exit(c).is_some_and(|rc| !killed_or_unknown(rc)),
            _ => false,
        },
        ContainerState::Other(_) => false,
    }
}

/// Whether the leftover's work goes on in this boot: it runs, or is stopping.
fn still_runs(c: &Listed) -> bool {
    match ContainerState::parse(&c.state) {
        ContainerState::Running => true,
        ContainerState::NotRunning(s) => s == "stopping",
        ContainerState::Other(_) => false,
    }
}

/// The exit podman recorded for a leftover that ended; None while it runs, or when podman never
/// learnt how it ended (`Exited: false`).
fn recorded_exit(c: &Listed) -> Option<i64> {
    let ended = ["stopped", "exited"].contains(&c.state.as_str());
    (ended && c.exited).then_some(c.exit_code)
}

/// An exit by a signal (128 + its number): the host went down under it, or it was killed. Or
/// no exit code at all: podman records -1 for a container whose conmon died before it could
/// record the exit (seen on the testbed once a wait had asked for it), and the work may have
/// stopped halfway.
fn killed_or_unknown(exit_code: i64) -> bool {
    !(0..=128).contains(&exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leftover as libpod's container list reports it; one that ended has its exit recorded.
    fn listed(id: &str, key: &str, state: &str) -> Listed {
        let ended = ["exited", "stopped"].contains(&state);
        serde_json::from_value(serde_json::json!({
            "Id": id, "ImageID": "sha256:img", "State": state, "Exited": ended,
            "Labels": {KEY_LABEL: key},
        }))
        .expect("a libpod list entry")
    }

    /// Issue 35: a power-off stops the migration's container with SIGTERM (exit 143); the next
    /// boot's run must migrate again, not take that for the migration's failure.
    #[test]
    fn a_leftover_killed_by_a_signal_is_removed_not_adopted() {
        let mut killed = listed("killed", "k1", "exited");
        killed.exit_code = 143;
        let found = sweep(vec![killed], "k1");
        assert_eq!(found.adopt, None);
        assert_eq!(found.remove, ["killed"]);
        let mut failed = listed("failed", "k1", "exited");
        failed.exit_code = 1;
        assert_eq!(sweep(vec![failed], "k1").adopt.as_deref(), Some("failed"));
    }

    /// Issue 43: podman records exit code -1 for a container whose conmon died first, once a
    /// wait asked for its exit: no answer of the migration's, so it runs anew.
    #[test]
    fn a_leftover_with_no_exit_code_is_removed_not_adopted() {
        let mut unknown = listed("unknown", "k1", "exited");
        unknown.exit_code = -1;
        let found = sweep(vec![unknown], "k1");
        assert_eq!(found.adopt, None);
        assert_eq!(found.remove, ["unknown"]);
    }

    /// Issue 43: a power-off can take conmon before it records the migration's exit. The
    /// next boot's podman then lists the container as exited with code 0 and no exit recorded
    /// (`Exited: false`), seen on the testbed after killing conmon and rebooting. Adopted, that
    /// would count as the migration's success: stamped, its new text installed and started on
    /// the schema it never migrated. It is removed, and the migration runs anew.
    #[test]
    fn a_leftover_whose_exit_was_never_recorded_is_removed_not_adopted() {
        let mut reset = listed("reset", "k1", "exited");
        reset.exited = false;
        let found = sweep(vec![reset], "k1");
        assert_eq!(found.adopt, None);
        assert_eq!(found.remove, ["reset"]);
        // One still running in this boot has no exit yet: it is waited for.
        let mut running = listed("running", "k1", "running");
        running.exited = false;
        assert_eq!(sweep(vec![running], "k1").adopt.as_deref(), Some("running"));
    }

    /// A killed run's migration still runs when the next run's check (other work under the
    /// same label) comes to prepare its own container: that one is left to run, never removed.
    #[test]
    fn a_running_leftover_of_other_work_is_neither_adopted_nor_removed() {
        for state in ["running", "stopping"] {
            let found = sweep(vec![listed("migrating", "migrate", state)], "check");
            assert_eq!(found.adopt, None, "{state}");
            assert!(found.remove.is_empty(), "{state}: {:?}", found.remove);
            assert_eq!(found.still_running, ["migrating"], "{state}");
        }
        let ended = sweep(vec![listed("migrated", "migrate", "exited")], "check");
        assert_eq!(ended.remove, ["migrated"]);
        assert!(ended.still_running.is_empty());
    }

    #[test]
    fn a_started_leftover_of_the_same_work_is_adopted_and_the_others_removed() {
        for state in ["running", "exited", "stopped"] {
            let found = sweep(
                vec![listed("other", "k2", "exited"), listed("same", "k1", state)],
                "k1",
            );
            let want = Sweep {
                adopt: Some("same".into()),
                adopted_exit: (state != "running").then_some(0),
                remove: vec!["other".into()],
                still_running: Vec::new(),
            };
            assert_eq!(found, want, "{state}");
        }
    }

    /// A run killed between its create and its start leaves a container that never runs:
    /// adopted, it would be waited on until the deadline.
    #[test]
    fn a_created_never_started_leftover_of_the_same_work_is_removed_not_adopted() {
        for state in ["created", "configured", "initialized", "hibernating"] {
            let found = sweep(vec![listed("same", "k1", state)], "k1");
            let want = Sweep {
                adopt: None,
                adopted_exit: None,
                remove: vec!["same".into()],
                still_running: Vec::new(),
            };
            assert_eq!(found, want, "{state}");
        }
        let found = sweep(
            vec![
                listed("new", "k1", "created"),
                listed("ran", "k1", "exited"),
            ],
            "k1",
        );
        assert_eq!(found.adopt.as_deref(), Some("ran"));
        assert_eq!(found.remove, ["new"]);
    }

    #[test]
    fn only_one_leftover_of_the_same_work_is_adopted() {
        let found = sweep(
            vec![listed("a", "k1", "running"), listed("b", "k1", "running")],
            "k1",
        );
        assert_eq!(found.adopt.as_deref(), Some("a"));
        assert_eq!(found.remove, ["b"]);
    }
}
