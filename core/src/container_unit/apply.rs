//! Changing the host: fetch the image, carry out the plan, wait, and roll back on failure.

use super::observe::Observation;
use super::{Desired, Host, PullPolicy, Report, Target, UnitError};
use crate::converge::{Expectation, short, wait_converged};
use crate::plan::{Action, Plan, Reason, Wanted};
use crate::state::{RevisionRecord, StateDir, atomic_write, remove_file};
use crate::systemd::Job;
use crate::time::now_rfc3339;
use crate::unit::{UnitFile, revision};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub struct Settings {
    pub rollback: bool,
    pub timeout: Duration,
    pub min_healthy: Duration,
}

/// How many journal lines a failure message carries.
const JOURNAL_LINES: usize = 25;

/// What the fetch did, or in check mode would do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fetched {
    /// A pull brought an image ID that was not local before.
    pub pulled: bool,
    /// Check mode: the policy calls for a pull that was not done.
    pub pull_due: bool,
}

/// Makes the desired image local, per the pull policy, before anything is stopped. In check
/// mode it looks but never pulls.
pub fn fetch(
    host: &Host,
    t: &Target,
    obs: &mut Observation,
    policy: PullPolicy,
    check: bool,
) -> Result<Fetched, UnitError> {
    let Some(d) = &t.desired else {
        return Ok(Fetched::default());
    };
    if t.wanted == Wanted::RolledBack {
        obs.image_id = match &obs.rollback_image_id {
            Some(id) => host.podman.image_id(id)?,
            None => host.podman.image_id(d.image.as_str())?,
        };
        if obs.image_id.is_none() {
            return Err(UnitError::ImageMissing(format!(
                "{} (ID {})",
                d.image,
                obs.rollback_image_id.as_deref().unwrap_or("?")
            )));
        }
        return Ok(Fetched::default());
    }
    let local = obs.image_id.clone();
    let pull = match (policy, &local) {
        (PullPolicy::Never, None) => return Err(UnitError::ImageMissing(d.image.to_string())),
        (PullPolicy::Never, Some(_)) | (PullPolicy::Missing, Some(_)) => false,
        (PullPolicy::Missing, None) | (PullPolicy::Always, _) => t.wanted != Wanted::Stopped,
    };
    obs.image_id = local.clone();
    if !pull || check {
        // Check mode cannot know what a registry holds; only a missing image is sure to come.
        return Ok(Fetched {
            pulled: false,
            pull_due: pull && check && local.is_none(),
        });
    }
    // After a pull the old image loses every tag; a refit-owned tag keeps it findable for a
    // rollback and safe from `podman image prune`.
    if let Some(running) = obs.running_image_id() {
        host.podman.tag(&running, &keep_tag(t))?;
    }
    let id = host.podman.pull(d.image.as_str())?;
    // A pull that brought the same image changed nothing.
    let pulled = local.as_deref() != Some(id.as_str());
    obs.image_id = Some(id);
    Ok(Fetched {
        pulled,
        pull_due: false,
    })
}

/// `localhost/refit-keep/NAME:previous`, with NAME reduced to what a repository allows.
fn keep_tag(t: &Target) -> String {
    let name: String = t
        .name
        .stem()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("localhost/refit-keep/{}:previous", name.trim_matches('-'))
}

#[allow(clippy::too_many_arguments)]
pub fn apply(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    plan: &Plan,
    s: &Settings,
    report: &mut Report,
    durations: &mut BTreeMap<&'static str, u64>,
) -> Result<(), String> {
    let service = t.name.service();
    let lap = Instant::now();
    let mut history = obs.history.clone();
    let step = |r: Result<(), UnitError>| r.map_err(|e| e.to_string());
    for action in &plan.actions {
        match action {
            Action::WriteUnit => {
                let Some(d) = &t.desired else { continue };
                if plan.reasons.contains(&Reason::Drift)
                    && let (Some(text), Some(rev)) = (&obs.file_text, &obs.file_revision)
                {
                    history.record_drift(record(rev, text, d.image.as_str(), None));
                }
                step(write_unit(t, d).map_err(UnitError::from))?;
                history.record(record(
                    &d.revision,
                    &d.text(),
                    d.image.as_str(),
                    obs.image_id.clone(),
                ));
                step(
                    state
                        .save_unit_history(&t.name.file_name(), &history)
                        .map_err(UnitError::from),
                )?;
            }
            Action::RemoveUnit => step(remove_file(&t.path).map(drop).map_err(UnitError::from))?,
            Action::DaemonReload => step(host.systemd.daemon_reload().map_err(UnitError::from))?,
            Action::Stop => step(
                host.systemd
                    .run_job(Job::Stop, std::slice::from_ref(&service))
                    .map_err(UnitError::from),
            )?,
            Action::Start | Action::Restart => {}
        }
    }
    durations.insert("apply", lap.elapsed().as_millis() as u64);
    let job = match (plan.has(Action::Start), plan.has(Action::Restart)) {
        (true, _) => Job::Start,
        (_, true) => Job::Restart,
        _ => return Ok(()),
    };
    let Some(d) = &t.desired else { return Ok(()) };
    let lap = Instant::now();
    let waited = restart_and_wait(host, &service, job, d, obs.image_id.clone(), s);
    durations.insert("converge", lap.elapsed().as_millis() as u64);
    match waited {
        Ok(c) => {
            report.restarted = true;
            report.container_id = Some(c.container_id);
            report.invocation_id = Some(c.invocation_id);
            if t.wanted == Wanted::RolledBack {
                history.revisions.retain(|r| r.revision != d.revision);
            }
            history.record(record(
                &d.revision,
                &d.text(),
                d.image.as_str(),
                obs.image_id.clone(),
            ));
            step(
                state
                    .save_unit_history(&t.name.file_name(), &history)
                    .map_err(UnitError::from),
            )?;
            Ok(())
        }
        Err(why) => {
            let journal = host.systemd.journal_tail(&service, JOURNAL_LINES);
            let failed = format!(
                "{service}: revision {} did not converge: {why}",
                short(&d.revision)
            );
            if !s.rollback {
                return Err(format!(
                    "{failed}. rollback is off, so it was left as it is.\nJournal of {service}:\n{journal}"
                ));
            }
            let lap = Instant::now();
            let rolled = roll_back(host, state, t, obs, &mut history, d, s);
            durations.insert("rollback", lap.elapsed().as_millis() as u64);
            match rolled {
                Ok(note) => {
                    report.rolled_back = true;
                    report.actions.push("rollback".into());
                    Err(format!(
                        "{failed}. {note}\nJournal of {service}:\n{journal}"
                    ))
                }
                Err(e) => Err(format!(
                    "{failed}. The rollback failed too: {e}\nJournal of {service}:\n{journal}"
                )),
            }
        }
    }
}

fn restart_and_wait(
    host: &Host,
    service: &str,
    job: Job,
    d: &Desired,
    image_id: Option<String>,
    s: &Settings,
) -> Result<crate::converge::Converged, String> {
    let units = [service.to_string()];
    host.systemd
        .reset_failed(&units)
        .map_err(|e| e.to_string())?;
    // The invocation running now; only a different one can be the new revision.
    let previous_invocation = host
        .systemd
        .show(&units)
        .map_err(|e| e.to_string())?
        .first()
        .map(|st| st.invocation_id().to_string())
        .unwrap_or_default();
    host.systemd
        .enqueue(job, &units)
        .map_err(|e| e.to_string())?;
    let exp = Expectation {
        service: service.to_string(),
        revision: d.revision.clone(),
        image_id: image_id.unwrap_or_default(),
        needs_health: d.needs_health,
        previous_invocation: Some(previous_invocation.to_string()).filter(|s| !s.is_empty()),
        min_healthy: s.min_healthy,
        timeout: s.timeout,
    };
    wait_converged(host.systemd, host.podman, host.clock, &exp).map_err(|e| match e {
        crate::converge::WaitError::NotConverged { why, .. } => why,
        other => other.to_string(),
    })
}

/// Restores the unit text and image that ran before, and brings back the state it was in.
fn roll_back(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    history: &mut crate::state::UnitHistory,
    failed: &Desired,
    s: &Settings,
) -> Result<String, String> {
    let Some(prev_text) = &obs.file_text else {
        return Err("there was no earlier unit file to roll back to".into());
    };
    let prev_unit = UnitFile::parse(prev_text).map_err(|e| e.to_string())?;
    let prev_image = prev_unit
        .value("Container", "Image")
        .unwrap_or_default()
        .to_string();
    let prev_id = obs
        .running_image_id()
        .or_else(|| history.current().and_then(|r| r.image_id.clone()));
    let prev = Desired::from_unit(
        prev_unit,
        crate::podman::ImageRef::parse(&prev_image).map_err(|e| e.to_string())?,
    );
    write_unit(t, &prev).map_err(|e| e.to_string())?;
    history.revisions.retain(|r| r.revision != failed.revision);
    history.record(record(
        &revision(&prev.unit),
        &prev.text(),
        &prev_image,
        prev_id.clone(),
    ));
    state
        .save_unit_history(&t.name.file_name(), history)
        .map_err(|e| e.to_string())?;
    if let Some(id) = &prev_id {
        host.podman
            .tag(id, &prev_image)
            .map_err(|e| e.to_string())?;
    }
    host.systemd.daemon_reload().map_err(|e| e.to_string())?;
    let service = t.name.service();
    if !obs.active {
        host.systemd
            .run_job(Job::Stop, std::slice::from_ref(&service))
            .map_err(|e| e.to_string())?;
        return Ok(format!(
            "Rolled back to revision {}; it was not running before, so it is stopped again.",
            short(&prev.revision)
        ));
    }
    let image_id = match prev_id {
        Some(id) => Some(id),
        None => host
            .podman
            .image_id(&prev_image)
            .map_err(|e| e.to_string())?,
    };
    let c = restart_and_wait(host, &service, Job::Restart, &prev, image_id.clone(), s)
        .map_err(|why| format!("the previous revision did not come back either: {why}"))?;
    Ok(format!(
        "Rolled back to revision {} (image {}), which runs again as invocation {}.",
        short(&prev.revision),
        short(image_id.as_deref().unwrap_or("?")),
        short(&c.invocation_id)
    ))
}

fn write_unit(t: &Target, d: &Desired) -> Result<(), crate::state::StateError> {
    if let Some(dir) = t.path.parent() {
        std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
    }
    atomic_write(&t.path, d.text().as_bytes(), 0o644)
}

fn record(rev: &str, text: &str, image_ref: &str, image_id: Option<String>) -> RevisionRecord {
    RevisionRecord {
        revision: rev.to_string(),
        text: text.to_string(),
        image_ref: image_ref.to_string(),
        image_id,
        recorded_at: now_rfc3339(),
    }
}
