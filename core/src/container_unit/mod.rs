//! `container_unit`: one quadlet `.container` unit, converged in place.
//!
//! The path reads as types: `Params` -> `Target` (validated, nothing touched) -> observe ->
//! fetch -> `Plan` -> apply -> wait -> result. Check mode stops after the plan.

mod apply;
mod observe;
pub mod spec;

use crate::ansible::{Diff, Invocation, Outcome};
use crate::converge::WaitError;
pub use crate::host::Host;
use crate::plan::{Plan, Reason, Wanted, plan};
use crate::podman::{ImageRef, PodmanError};
use crate::state::{StateDir, StateError};
use crate::systemd::SystemdError;
use crate::unit::name::NameError;
use crate::unit::render::RenderError;
use crate::unit::revision::with_revision_label;
use crate::unit::{ContainerOptions, UnitFile, UnitName, render, revision};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use observe::Observation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullPolicy {
    Always,
    Missing,
    Never,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub name: String,
    pub state: Wanted,
    #[serde(flatten)]
    pub options: ContainerOptions,
    pub pull: PullPolicy,
    pub rollback: bool,
    pub timeout: u64,
    pub min_healthy_time: u64,
    pub quadlet_dir: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
}

#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(
        "{0} is a template; template units are replaced instance by instance, which this module does not do yet: manage each instance's own unit instead"
    )]
    Template(String),
    #[error(
        "image {0} is not present locally and pull is `never`; load it first (podman load -i ARCHIVE), or allow pulls"
    )]
    ImageMissing(String),
    #[error(
        "{0} has no earlier revision recorded in the state dir, so there is nothing to roll back to"
    )]
    NoPrevious(String),
    #[error("{unit}: the unit file on disk does not parse ({detail}); fix or remove {path}")]
    BadFileOnDisk {
        unit: String,
        path: PathBuf,
        detail: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Systemd(#[from] SystemdError),
    #[error(transparent)]
    Podman(#[from] PodmanError),
    #[error(transparent)]
    Wait(#[from] WaitError),
}

/// A validated request: what to write where, before anything on the host is touched.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: UnitName,
    pub wanted: Wanted,
    pub path: PathBuf,
    /// None for `absent` and `rolled_back`, which need no options.
    pub desired: Option<Desired>,
}

#[derive(Debug, Clone)]
pub struct Desired {
    pub unit: UnitFile,
    pub revision: String,
    pub image: ImageRef,
    pub needs_health: bool,
}

impl Desired {
    pub fn from_unit(unit: UnitFile, image: ImageRef) -> Self {
        let revision = revision(&unit);
        let needs_health = unit
            .value("Container", "HealthCmd")
            .is_some_and(|v| !v.is_empty() && v != "none");
        Desired {
            unit: with_revision_label(&unit, &revision),
            revision,
            image,
            needs_health,
        }
    }
    pub fn text(&self) -> String {
        self.unit.render()
    }
}

/// Everything the module reports, beyond changed/failed/msg.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub unit: String,
    pub service: String,
    pub path: String,
    pub state: String,
    pub revision: RevisionPair,
    pub image: ImageReport,
    pub restart_needed: bool,
    pub restarted: bool,
    pub rolled_back: bool,
    pub reasons: Vec<Reason>,
    pub actions: Vec<String>,
    pub container_id: Option<String>,
    pub invocation_id: Option<String>,
    pub duration_ms: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RevisionPair {
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ImageReport {
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub previous_id: Option<String>,
    pub id: Option<String>,
    pub pulled: bool,
}

/// Checks the parameters without touching the host.
pub fn target(p: &Params) -> Result<Target, UnitError> {
    let name = UnitName::parse(&p.name)?;
    if name.is_template() {
        return Err(UnitError::Template(name.file_name()));
    }
    let path = p.quadlet_dir.join(name.file_name());
    let desired = match p.state {
        Wanted::Absent | Wanted::RolledBack => None,
        _ => {
            let r = render(&p.options)?;
            Some(Desired::from_unit(r.unit, r.image))
        }
    };
    Ok(Target {
        name,
        wanted: p.state,
        path,
        desired,
    })
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, UnitError> {
    let started = Instant::now();
    let mut t = target(&p)?;
    let state = StateDir::new(&p.state_dir);
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock(&format!("container_unit {}", t.name))?)
    };
    let mut durations = BTreeMap::new();
    let mut lap = Instant::now();
    let mut obs = observe::observe(host, &state, &t)?;
    if t.wanted == Wanted::RolledBack {
        let prev = obs
            .history
            .previous()
            .cloned()
            .ok_or_else(|| UnitError::NoPrevious(t.name.file_name()))?;
        let unit = UnitFile::parse(&prev.text).map_err(RenderError::from)?;
        let image = ImageRef::parse(&prev.image_ref).map_err(RenderError::from)?;
        t.desired = Some(Desired::from_unit(unit, image));
        obs.rollback_image_id = prev.image_id.clone();
    }
    durations.insert("observe", ms(lap.elapsed()));

    lap = Instant::now();
    let fetched = apply::fetch(host, &t, &mut obs, p.pull, inv.check_mode)?;
    durations.insert("fetch", ms(lap.elapsed()));

    let desired_rev = t.desired.as_ref().map_or("", |d| d.revision.as_str());
    let plan = plan(t.wanted, desired_rev, &obs.plan_input());
    let mut report = report_of(&t, &obs, &plan, fetched);
    let diff = diff_of(&t, &obs);

    let changes = plan.changes() || fetched.pulled || fetched.pull_due;
    if inv.check_mode || !plan.changes() {
        report.duration_ms = durations;
        report.duration_ms.insert("total", ms(started.elapsed()));
        let msg = summary(&t, &plan, inv.check_mode);
        let mut out = Outcome::new(changes, msg).with_data(&report);
        out.diff.extend(diff);
        return Ok(out);
    }

    let settings = apply::Settings {
        rollback: p.rollback,
        timeout: Duration::from_secs(p.timeout),
        min_healthy: Duration::from_millis(p.min_healthy_time),
    };
    let applied = apply::apply(
        host,
        &state,
        &t,
        &obs,
        &plan,
        &settings,
        &mut report,
        &mut durations,
    );
    report.duration_ms = durations;
    report.duration_ms.insert("total", ms(started.elapsed()));
    let mut out = match applied {
        Ok(()) => Outcome::new(true, summary(&t, &plan, false)).with_data(&report),
        Err(failure) => Outcome::new(true, "").with_data(&report).failed(failure),
    };
    out.diff.extend(diff);
    Ok(out)
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn report_of(t: &Target, obs: &Observation, plan: &Plan, fetched: apply::Fetched) -> Report {
    let pull = fetched.pulled || fetched.pull_due;
    Report {
        unit: t.name.file_name(),
        service: t.name.service(),
        path: t.path.display().to_string(),
        state: format!("{:?}", t.wanted).to_lowercase(),
        revision: RevisionPair {
            before: obs.file_revision.clone(),
            after: t
                .desired
                .as_ref()
                .map(|d| d.revision.clone())
                .filter(|_| t.wanted != Wanted::Absent),
        },
        image: ImageReport {
            reference: t.desired.as_ref().map(|d| d.image.to_string()),
            previous_id: obs.running_image_id(),
            id: obs.image_id.clone(),
            pulled: fetched.pulled,
        },
        restart_needed: plan.restart_needed,
        reasons: plan.reasons.clone(),
        // A pull, done or (in check mode) due, comes before everything else.
        actions: pull
            .then(|| "pull".to_string())
            .into_iter()
            .chain(plan.actions.iter().map(|a| action_name(*a)))
            .collect(),
        container_id: obs.container.as_ref().map(|c| c.id.clone()),
        invocation_id: Some(obs.invocation_id.clone()).filter(|s| !s.is_empty()),
        ..Report::default()
    }
}

pub fn action_name(a: crate::plan::Action) -> String {
    serde_json::to_value(a)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn diff_of(t: &Target, obs: &Observation) -> Option<Diff> {
    let before = obs.file_text.clone().unwrap_or_default();
    let after = match t.wanted {
        Wanted::Absent => String::new(),
        _ => t.desired.as_ref().map(Desired::text).unwrap_or_default(),
    };
    (before != after).then(|| Diff {
        before,
        after,
        before_header: format!("{} (on disk)", t.path.display()),
        after_header: format!("{} (desired)", t.path.display()),
    })
}

fn summary(t: &Target, plan: &Plan, check: bool) -> String {
    if !plan.changes() {
        let extra = if plan.restart_needed {
            "; a restart is needed to run it"
        } else {
            ""
        };
        return format!("{} is converged{extra}", t.name.service());
    }
    let verb = if check { "would" } else { "did" };
    let actions: Vec<String> = plan.actions.iter().map(|a| action_name(*a)).collect();
    let reasons: Vec<String> = plan
        .reasons
        .iter()
        .map(|r| {
            serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    format!(
        "{}: {verb} {} ({})",
        t.name.service(),
        actions.join(", "),
        reasons.join(", ")
    )
}

/// Runs the module against this host: systemctl, the podman socket and the system clock.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, UnitError> {
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    run(p, inv, &Host::real(&podman))
}

#[cfg(test)]
mod tests;
