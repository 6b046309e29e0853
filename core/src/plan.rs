//! The plan: a pure function from what is wanted and what was observed to the actions that
//! converge a unit, each with its reasons. No I/O here; check mode returns exactly this.

use crate::podman::Health;
use serde::{Deserialize, Serialize};

/// Why a unit is not converged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No unit file yet.
    NotInstalled,
    /// The unit text differs from the desired one, on disk or in the running container.
    UnitChanged,
    /// The file on disk was edited by hand since refit wrote it.
    Drift,
    /// The running container's image is not the current local image of its reference.
    ImageChanged,
    /// A file in `restart_on_change` changed after the running container started.
    FileChanged,
    /// A podman secret refit did not create was set after the running container started.
    SecretChanged,
    NotRunning,
    Unhealthy,
    /// systemd has not loaded the file on disk yet.
    ReloadPending,
    /// Running, but wanted stopped or absent.
    Running,
    /// The unit file is there, but wanted absent.
    Installed,
}

impl Reason {
    /// The name results give it, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotInstalled => "not_installed",
            Reason::UnitChanged => "unit_changed",
            Reason::Drift => "drift",
            Reason::ImageChanged => "image_changed",
            Reason::FileChanged => "file_changed",
            Reason::SecretChanged => "secret_changed",
            Reason::NotRunning => "not_running",
            Reason::Unhealthy => "unhealthy",
            Reason::ReloadPending => "reload_pending",
            Reason::Running => "running",
            Reason::Installed => "installed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    WriteUnit,
    RemoveUnit,
    DaemonReload,
    Stop,
    Start,
    Restart,
}

impl Action {
    /// The name results give it, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::WriteUnit => "write_unit",
            Action::RemoveUnit => "remove_unit",
            Action::DaemonReload => "daemon_reload",
            Action::Stop => "stop",
            Action::Start => "start",
            Action::Restart => "restart",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    Present,
    #[default]
    Started,
    Restarted,
    Stopped,
    Absent,
    RolledBack,
}

impl Wanted {
    /// The name the module's `state` option gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Wanted::Present => "present",
            Wanted::Started => "started",
            Wanted::Restarted => "restarted",
            Wanted::Stopped => "stopped",
            Wanted::Absent => "absent",
            Wanted::RolledBack => "rolled_back",
        }
    }
}

/// The running container of a unit, as far as the plan cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningContainer {
    pub revision: Option<String>,
    pub image_id: String,
    pub health: Option<Health>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// The revision of the unit file on disk, if there is one.
    pub file_revision: Option<String>,
    /// The revision refit last wrote, from the state dir.
    pub recorded_revision: Option<String>,
    pub need_daemon_reload: bool,
    /// systemd reports the service active or activating.
    pub active: bool,
    pub container: Option<RunningContainer>,
    /// The local image ID of the desired reference, after any pull.
    pub image_id: Option<String>,
    /// Check mode: the registry holds a newer image under the reference than the local one.
    pub newer_image: bool,
    /// The file on disk carries no refit label: another tool or a hand wrote it.
    pub file_unlabelled: bool,
    /// Inputs from outside the unit text that changed since the running container started.
    pub inputs_changed: Vec<Reason>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub reasons: Vec<Reason>,
    /// The running service does not run the desired revision and image.
    pub restart_needed: bool,
    /// The service is not running; `started` would start it. A `present` run says so, so a flow
    /// that was interrupted after stopping services knows to start them again.
    pub start_needed: bool,
}

/// `desired` is the desired revision; it is ignored for `Absent`.
pub fn plan(wanted: Wanted, desired: &str, obs: &Observed) -> Plan {
    let mut reasons = Vec::new();
    let mut actions = Vec::new();
    if wanted == Wanted::Absent {
        if obs.active {
            reasons.push(Reason::Running);
            actions.push(Action::Stop);
        }
        if obs.file_revision.is_some() {
            reasons.push(Reason::Installed);
            actions.extend([Action::RemoveUnit, Action::DaemonReload]);
        }
        return Plan {
            actions,
            reasons,
            ..Plan::default()
        };
    }

    let file_changed = obs.file_revision.as_deref() != Some(desired);
    match (&obs.file_revision, &obs.recorded_revision) {
        (None, _) => reasons.push(Reason::NotInstalled),
        (Some(on_disk), Some(recorded)) if on_disk != recorded => {
            reasons.push(Reason::Drift);
            if recorded != desired {
                reasons.push(Reason::UnitChanged);
            }
        }
        _ if file_changed => reasons.push(Reason::UnitChanged),
        _ => {}
    }
    if file_changed {
        actions.push(Action::WriteUnit);
    }
    if file_changed || obs.need_daemon_reload {
        if !file_changed {
            reasons.push(Reason::ReloadPending);
        }
        actions.push(Action::DaemonReload);
    }

    // What runs, against what is wanted. A file already rewritten by an earlier run that never
    // restarted (foremanctl's lost handler) shows here as a revision mismatch.
    let running = obs.active.then_some(obs.container.as_ref()).flatten();
    let mut restart_needed = false;
    if let Some(c) = running {
        if c.revision.as_deref() != Some(desired) {
            restart_needed = true;
            if !reasons.contains(&Reason::UnitChanged) {
                reasons.push(Reason::UnitChanged);
            }
        }
        if obs.newer_image || obs.image_id.as_deref().is_some_and(|id| id != c.image_id) {
            restart_needed = true;
            reasons.push(Reason::ImageChanged);
        }
        if !obs.inputs_changed.is_empty() {
            restart_needed = true;
            reasons.extend(obs.inputs_changed.iter().copied());
        }
        if c.health == Some(Health::Unhealthy) {
            restart_needed = true;
            reasons.push(Reason::Unhealthy);
        }
    }

    let start_needed = running.is_none() && !matches!(wanted, Wanted::Stopped);
    match wanted {
        Wanted::Present => {}
        Wanted::Started | Wanted::RolledBack => {
            if running.is_none() {
                reasons.push(Reason::NotRunning);
                actions.push(Action::Start);
            } else if restart_needed {
                actions.push(Action::Restart);
            }
        }
        Wanted::Restarted => {
            if running.is_none() {
                reasons.push(Reason::NotRunning);
                actions.push(Action::Start);
            } else {
                actions.push(Action::Restart);
            }
        }
        Wanted::Stopped => {
            if obs.active {
                reasons.push(Reason::Running);
                actions.push(Action::Stop);
            }
            restart_needed = false;
        }
        Wanted::Absent => unreachable!("handled above"),
    }
    // A container started from a file without refit's label would not say which revision it
    // runs: before refit starts one, it writes its own text, label included. Until then a unit
    // taken over keeps the file its tool wrote. `present` starts nothing, so it writes nothing.
    let starts = wanted != Wanted::Present
        && (restart_needed || start_needed || wanted == Wanted::Restarted);
    if obs.file_unlabelled && starts && !file_changed {
        actions.insert(0, Action::WriteUnit);
        if !actions.contains(&Action::DaemonReload) {
            actions.insert(1, Action::DaemonReload);
        }
    }
    reasons.sort();
    reasons.dedup();
    Plan {
        actions,
        reasons,
        restart_needed,
        start_needed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REV: &str = "r2";

    fn converged() -> Observed {
        Observed {
            file_revision: Some(REV.into()),
            recorded_revision: Some(REV.into()),
            need_daemon_reload: false,
            active: true,
            container: Some(RunningContainer {
                revision: Some(REV.into()),
                image_id: "img2".into(),
                health: Some(Health::Healthy),
            }),
            image_id: Some("img2".into()),
            newer_image: false,
            file_unlabelled: false,
            inputs_changed: Vec::new(),
        }
    }

    fn case(name: &str, wanted: Wanted, obs: Observed) -> (String, Plan) {
        (name.to_string(), plan(wanted, REV, &obs))
    }

    #[test]
    fn plans() {
        let mut cases = vec![
            case("converged, started", Wanted::Started, converged()),
            case("converged, present", Wanted::Present, converged()),
            case(
                "first deploy",
                Wanted::Started,
                Observed {
                    image_id: Some("img2".into()),
                    ..Observed::default()
                },
            ),
        ];
        let mut o = converged();
        o.file_revision = Some("r1".into());
        o.recorded_revision = Some("r1".into());
        if let Some(c) = o.container.as_mut() {
            c.revision = Some("r1".into());
        }
        cases.push(case("option changed", Wanted::Started, o.clone()));
        cases.push(case("option changed, present only", Wanted::Present, o));
        let mut o = converged();
        o.image_id = Some("img3".into());
        cases.push(case("new image under the tag", Wanted::Started, o));
        let mut o = converged();
        o.file_revision = Some("hand-edited".into());
        o.need_daemon_reload = true;
        cases.push(case("hand edit", Wanted::Started, o));
        let mut o = converged();
        if let Some(c) = o.container.as_mut() {
            c.revision = Some("r1".into());
        }
        cases.push(case("file written, restart lost", Wanted::Started, o));
        let mut o = converged();
        o.active = false;
        o.container = None;
        cases.push(case("stopped, wanted started", Wanted::Started, o.clone()));
        cases.push(case("stopped, wanted stopped", Wanted::Stopped, o.clone()));
        cases.push(case("stopped, wanted absent", Wanted::Absent, o));
        cases.push(case("running, wanted absent", Wanted::Absent, converged()));
        cases.push(case("converged, restarted", Wanted::Restarted, converged()));
        let mut o = converged();
        if let Some(c) = o.container.as_mut() {
            c.health = Some(Health::Unhealthy);
        }
        cases.push(case("unhealthy", Wanted::Started, o));
        insta::assert_yaml_snapshot!(cases);
    }

    /// A timer's job another tool wrote, taken over as `present` while it is not running: no
    /// run starts it, so none writes refit's label into its file either.
    #[test]
    fn a_present_unit_without_refits_label_is_not_rewritten_while_it_is_not_running() {
        let mut o = converged();
        o.active = false;
        o.container = None;
        o.file_unlabelled = true;
        let p = plan(Wanted::Present, REV, &o);
        assert!(p.actions.is_empty(), "{p:?}");
        let p = plan(Wanted::Started, REV, &o);
        assert_eq!(
            p.actions,
            [Action::WriteUnit, Action::DaemonReload, Action::Start],
            "a start writes the label first"
        );
    }
}
