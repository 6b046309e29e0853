//! `container_unit`: quadlet units of every kind refit manages (`.container`, `.network`,
//! `.volume`, `.pod`, `.image`, `.build`), converged in place.
//!
//! The path reads as types: `Params` -> `Target`s (validated, ordered, nothing touched) ->
//! `Observation`s -> fetch -> `TargetPlan`s -> apply -> wait -> `Report`s. Check mode stops after
//! the plans. A target is one unit file and the services it runs: itself, or a template's
//! instances.

pub mod adopt;
mod apply;
mod checkpoint;
mod desired;
mod error;
mod failure;
mod fetch;
mod from_params;
mod image_hold;
mod inputs;
mod jobs;
mod kept_inputs;
mod links;
mod network_change;
mod observe;
mod oneshot;
pub mod ports;
mod prepare;
mod references;
mod report;
mod resolve;
mod retention;
mod rollback;
mod secret_names;
mod secrets;
mod socket;
pub mod spec;
mod target;
mod volume_change;
mod work;

use crate::ansible::{Invocation, Outcome};
use crate::plan::{Action, Wanted};
use crate::quadlet::NewText;
use crate::registry::Asked;
use crate::state::StateDir;
use crate::unit::ContainerOptions;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use crate::host::Host;
pub use error::UnitError;
use error::render_error;
pub use observe::Observation;
pub use report::Report;
pub use target::{Desired, Target, TargetPlan};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullPolicy {
    Always,
    Missing,
    Never,
}

/// One unit's description: at the top level, or one entry of `units`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UnitParams {
    pub name: Option<String>,
    #[serde(flatten)]
    pub options: ContainerOptions,
    #[serde(default)]
    pub instances: Vec<String>,
    pub canary: Option<u64>,
    pub state: Option<Wanted>,
    /// With `rolled_back`: the kept revision to go back to, by a prefix of its history id.
    pub rollback_to: Option<String>,
    /// Host files whose change restarts the unit (`inputs`).
    #[serde(default)]
    pub restart_on_change: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(flatten)]
    pub unit: UnitParams,
    #[serde(default)]
    pub units: Vec<UnitParams>,
    pub state: Wanted,
    pub pull: PullPolicy,
    /// Registry logins for pulls and digest lookups; None for podman's own lookup.
    #[serde(default)]
    pub auth_file: Option<PathBuf>,
    pub rollback: bool,
    pub timeout: u64,
    pub min_healthy_time: u64,
    pub max_parallel: u64,
    #[serde(default = "one")]
    pub max_parallel_units: u64,
    pub checkpoint: Option<String>,
    /// The flow run this call is part of.
    #[serde(default)]
    pub run_id: Option<String>,
    /// New texts go to the stage named by `checkpoint`, not the quadlet dir (`state::stage`).
    #[serde(default)]
    pub stage: bool,
    pub quadlet_dir: PathBuf,
    pub systemd_dir: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
    pub keep_revisions: u64,
    pub history: bool,
}

/// `max_parallel_units` for parameters built without it: one unit at a time, as before it was.
pub(crate) fn one() -> u64 {
    1
}

/// How a run goes, for every target of it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub rollback: bool,
    /// A flow's recovery (`rolled_back` to a checkpoint): every unit goes back on its own, and
    /// one that fails is reported without stopping the others. Nothing is rolled back from the
    /// checkpoint, the last revision known to work.
    pub restoring: bool,
    pub timeout: Duration,
    pub min_healthy: Duration,
    pub max_parallel: usize,
    /// Units started and health-gated at once, when none depends on another.
    pub max_parallel_units: usize,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, UnitError> {
    let started = Instant::now();
    let batch = !p.units.is_empty();
    let state = StateDir::new(&p.state_dir);
    // Validated with the placeholder key first: bad input is refused before the state dir is
    // touched, even to create the host key.
    validate(&p)?;
    ports::refuse_privileged(&p, &inv.scope)?;
    let key = secret_names::SecretKey::load(&state, !inv.check_mode)?;
    let targets = from_params::targets(&p, &key)?;
    // Read only: a volume change podman cannot make in place is refused before the lock.
    volume_change::refuse_recreation(host, &targets)?;
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run(
            &format!("container_unit {}", names(&targets)),
            p.run_id.as_deref(),
            host.clock,
        )?)
    };
    // Everything is observed, and every image fetched, before anything is changed.
    let restore_from = match (&p.checkpoint, p.state) {
        (Some(name), Wanted::RolledBack) => Some(checkpoint::load(&state, name)?),
        _ => None,
    };
    let settings = Settings {
        rollback: p.rollback && restore_from.is_none(),
        restoring: restore_from.is_some(),
        timeout: Duration::from_secs(p.timeout),
        min_healthy: Duration::from_millis(p.min_healthy_time),
        max_parallel: usize::try_from(p.max_parallel)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(UnitError::MaxParallel)?,
        max_parallel_units: usize::try_from(p.max_parallel_units)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(UnitError::MaxParallelUnits)?,
    };

    // The registries' answers and the host's state are independent reads: ask both at once.
    let ask = p.pull == PullPolicy::Always && p.state != Wanted::RolledBack;
    let (asked, pre) = crate::parallel::join(
        || ask.then(|| Asked::ask_all(host.registry, &fetch::registry_locations(&targets))),
        || observe::prefetch(host, &targets),
    );
    let pre = pre?;
    let host = match &asked {
        Some(asked) => &Host {
            registry: asked,
            ..*host
        },
        None => host,
    };
    // `stage` with `started`: the stage's held images are this call's to install.
    let held = match (&p.checkpoint, p.stage && p.state == Wanted::Started) {
        (Some(name), true) => state.load_stage(name)?.held,
        _ => Default::default(),
    };
    let how = prepare::How {
        pre: &pre,
        restore_from: restore_from.as_ref(),
        batch,
        pull: p.pull,
        check: inv.check_mode,
        stage: p.stage && p.state == Wanted::Present,
        held: &held,
    };
    let prepare::Prepared {
        before,
        mut work,
        untouched: unchanged_by_rollback,
    } = prepare::prepare_all(host, &state, targets, &how)?;
    // A `.network` podman can change only by making it anew: planned, and named in check mode.
    network_change::plan_all(host, &mut work, &p.quadlet_dir)?;
    // quadlet judges every unit to be written before the first one is: a unit it rejects
    // would leave a service that no longer loads after the next daemon-reload.
    // All of them at once: a container may refer to a `.network` the same run writes.
    let new: Vec<NewText> = work
        .iter()
        .filter(|w| w.plan.file.contains(&Action::WriteUnit) || w.report.result.staged)
        .filter_map(|w| {
            Some(NewText {
                file_name: w.target.name.file_name(),
                text: w.target.desired.as_ref()?.text(),
            })
        })
        .collect();
    host.quadlet.check_all(&new, &p.quadlet_dir)?;
    if let Some(name) = &p.checkpoint
        && !inv.check_mode
        && restore_from.is_none()
    {
        checkpoint::merge(&state, name, before)?;
    }
    if let Some(name) = p
        .checkpoint
        .as_ref()
        .filter(|_| how.stage && !inv.check_mode)
    {
        state.save_stage(name, &staged(&work))?;
    }

    let mut failure = None;
    if !inv.check_mode {
        let applier = apply::Applier {
            host,
            state: &state,
            settings: &settings,
        };
        failure = applier.apply_all(&mut work).err().map(|e| e.to_string());
        if failure.is_none() {
            adopt::record_converged(&state, &work)?;
            kept_inputs::after_run(host, &state, &key, &work)?;
            image_hold::after_run(host, &mut work, &p.quadlet_dir, p.pull)?;
        }
        if failure.is_none()
            && let (Some(name), Some(_)) = (&p.checkpoint, &restore_from)
        {
            checkpoint::remove(&state, name)?;
            // What the run staged and never installed is nothing to go forward to now.
            state.drop_stage(name)?;
        }
    }
    let prune = !inv.check_mode && failure.is_none();
    let secrets::AfterRun { former, warnings } =
        secrets::after_run(host, &state, &key, &work, prune)?;
    let retention = retention::Retention {
        keep: p.keep_revisions as usize,
        prune,
        history: p.history,
    };
    let tidy = retention::after_run(host, &state, &mut work, retention, inv.check_mode);
    let reports: Vec<Report> = work.into_iter().map(|w| w.report).collect();
    let freed = retention::freed(&reports);
    let total = started.elapsed().as_millis() as u64;
    let asked = report::Asked {
        batch,
        check: inv.check_mode,
    };
    let mut out = report::outcome(reports, asked, failure, total);
    if let Some(freed) = freed {
        out.msg = format!("{}; {freed}", out.msg);
    }
    out.mask_also = former;
    out.warnings.extend(warnings);
    out.warnings.extend(tidy);
    if !unchanged_by_rollback.is_empty() {
        out.warnings.push(format!(
            "{} had no earlier revision recorded, and were left as they are",
            unchanged_by_rollback.join(", ")
        ));
    }
    Ok(out)
}

/// The stage of a staged run: the new text of every target whose file change it deferred,
/// and the new image of every target whose tag it held.
fn staged(work: &[work::Work]) -> crate::state::Stage {
    let held = work
        .iter()
        .filter_map(|w| Some((w.target.name.file_name(), w.observed.held.clone()?)))
        .collect();
    let units = work
        .iter()
        .filter(|w| w.report.result.staged)
        .filter_map(|w| {
            let t = &w.target;
            let d = t.desired.as_ref()?;
            let staged = crate::state::Staged {
                revision: d.revision.clone(),
                text: d.text(),
            };
            Some((t.name.file_name(), staged))
        })
        .collect();
    crate::state::Stage { units, held }
}

fn names(targets: &[Target]) -> String {
    targets
        .iter()
        .map(|t| t.name.file_name())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a run reads of the host before it changes anything.
#[derive(Default)]
pub struct Reads {
    /// Every unit's services, instances included: what its first look at systemd asks.
    pub services: Vec<String>,
    /// Every image a unit is to run, as the run inspects it, each once.
    pub images: Vec<String>,
}

/// Checks every parameter without touching the host: the units, and the run's own options.
/// Says what the run will read of the host, from the same targets.
pub fn validate(p: &Params) -> Result<Reads, UnitError> {
    let targets = from_params::targets(p, &secret_names::SecretKey::placeholder())?;
    if p.max_parallel == 0 {
        return Err(UnitError::MaxParallel);
    }
    if p.max_parallel_units == 0 {
        return Err(UnitError::MaxParallelUnits);
    }
    if !(1..=crate::state::MAX_KEEP_REVISIONS as u64).contains(&p.keep_revisions) {
        return Err(UnitError::KeepRevisions(p.keep_revisions));
    }
    if let Some(name) = &p.checkpoint
        && !crate::state::is_plain_name(name)
    {
        return Err(UnitError::BadCheckpoint(name.clone()));
    }
    if p.stage && (!matches!(p.state, Wanted::Present | Wanted::Started) || p.checkpoint.is_none())
    {
        return Err(UnitError::StageNeeds);
    }
    let mut images: Vec<String> = targets
        .iter()
        .filter_map(|t| Some(t.desired.as_ref()?.image.as_ref()?.as_str().to_string()))
        .collect();
    images.sort();
    images.dedup();
    Ok(Reads {
        services: observe::services_of(&targets),
        images,
    })
}

/// Runs the module against this host: systemctl, the podman socket and the system clock.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, UnitError> {
    // Every parameter is checked before the first podman or systemd call.
    validate(&p)?;
    // Read before podman is reached: a bad auth_file fails with nothing touched.
    let registry = crate::registry::HttpRegistry::for_auth_file(p.auth_file.as_deref())
        .map_err(crate::registry::RegistryError::from)?;
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?
        .with_pull_timeout(Duration::from_secs(p.timeout))
        .with_registry_auth(registry.pull_auth());
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    run(p, inv, &Host::real(&podman, &registry, &systemd))
}

#[cfg(test)]
mod adopt_tests;
#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod image_hold_tests;
#[cfg(test)]
mod kept_inputs_tests;
#[cfg(test)]
mod kinds_tests;
#[cfg(test)]
mod network_change_tests;
#[cfg(test)]
mod plan_bench;
#[cfg(test)]
mod restore_tests;
#[cfg(test)]
mod retention_tests;
#[cfg(test)]
mod rollback_tests;
#[cfg(test)]
mod tests;
