//! Changing the host: fetch images, carry out the plans in order, replace instances in
//! health-gated batches, and roll back on failure.

use super::observe::Observation;
use super::report::{InstanceReport, Report};
use super::target::{Desired, Target, TargetPlan};
use super::{Host, PullPolicy, Settings, UnitError};
use crate::converge::{Converged, Expectation, short, wait_converged};
use crate::plan::{Action, Reason, Wanted};
use crate::podman::ImageRef;
use crate::registry::Location;
use crate::state::{RevisionRecord, StateDir, UnitHistory, atomic_write, remove_file};
use crate::systemd::Job;
use crate::time::now_rfc3339;
use crate::unit::UnitFile;
use std::time::Instant;

/// How many journal lines a failure message carries.
const JOURNAL_LINES: usize = 25;

/// What the fetch did, or in check mode would do.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// A pull brought an image ID that was not local before.
    pub pulled: bool,
    /// Check mode: the policy calls for a pull that was not done.
    pub pull_due: bool,
    /// Check mode, `pull: always`: why the registry could not be asked.
    pub registry_error: Option<String>,
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
    if let Some(id) = obs.rollback_image_id.clone() {
        // Going back: the reference must name the image the old revision ran again, before
        // anything restarts on it.
        if host.podman.image_id(&id)?.is_none() {
            return Err(UnitError::ImageMissing(format!("{} (ID {id})", d.image)));
        }
        if obs.image_id.as_deref() != Some(id.as_str()) && !check {
            host.podman.tag(&id, d.image.as_str())?;
        }
        obs.image_id = Some(id);
        return Ok(Fetched::default());
    }
    let local = obs.image_id.clone();
    let pull = match (policy, &local) {
        (PullPolicy::Never, None) => return Err(UnitError::ImageMissing(d.image.to_string())),
        (PullPolicy::Never, Some(_)) | (PullPolicy::Missing, Some(_)) => false,
        (PullPolicy::Missing, None) | (PullPolicy::Always, _) => t.wanted != Wanted::Stopped,
    };
    if !pull || check {
        let mut out = Fetched {
            pull_due: pull && check && local.is_none(),
            ..Fetched::default()
        };
        // Check mode asks the registry, without pulling, whether the tag has moved on.
        if pull && check && local.is_some() {
            match newer_in_registry(host, &d.image) {
                Ok(newer) => {
                    obs.newer_image = newer;
                    out.pull_due = newer == Some(true);
                }
                Err(e) => out.registry_error = Some(e.to_string()),
            }
        }
        return Ok(out);
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
        ..Fetched::default()
    })
}

/// Whether the registry's digest for the reference is one the local image was not pulled as;
/// None for an image podman recorded no digest of (loaded from an archive, or built here).
fn newer_in_registry(host: &Host, image: &ImageRef) -> Result<Option<bool>, UnitError> {
    let known = host.podman.repo_digests(image.as_str())?;
    if known.is_empty() {
        return Ok(None);
    }
    let loc = Location::of(image);
    let remote = format!("{}@{}", loc.name(), host.registry.digest(&loc)?);
    Ok(Some(!known.contains(&remote)))
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

pub type Work = (Target, Observation, TargetPlan, Report);

/// Applies every target in order. On a failure, the failed target is rolled back, and so is
/// every target this run changed before it, newest first. Returns the failure message.
pub fn apply_all(host: &Host, state: &StateDir, work: &mut [Work], s: &Settings) -> Option<String> {
    let mut done: Vec<usize> = Vec::new();
    for i in 0..work.len() {
        let (t, obs, plan, report) = &mut work[i];
        if !plan.changes() {
            continue;
        }
        let Err(failure) = apply_target(host, state, t, obs, plan, s, report) else {
            done.push(i);
            continue;
        };
        let mut msg = failure;
        if s.rollback && !done.is_empty() {
            msg.push_str("\nUnits this run had already changed are rolled back too:");
            for &j in done.iter().rev() {
                let (t, obs, plan, report) = &mut work[j];
                let started: Vec<String> = plan.starts.iter().map(|(svc, _)| svc.clone()).collect();
                let note = match roll_back(host, state, t, obs, &started, s) {
                    Ok(note) => {
                        report.rolled_back = true;
                        note
                    }
                    Err(e) => format!("its rollback failed: {e}"),
                };
                msg.push_str(&format!("\n- {}: {note}", t.name.file_name()));
            }
        }
        return Some(msg);
    }
    None
}

fn apply_target(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    plan: &TargetPlan,
    s: &Settings,
    report: &mut Report,
) -> Result<(), String> {
    let lap = Instant::now();
    let mut history = obs.history.clone();
    let err = |e: UnitError| e.to_string();
    // Removing a unit stops its services first; otherwise the new file comes first.
    if t.wanted == Wanted::Absent {
        stop_all(host, &plan.stops).map_err(err)?;
        apply_file(host, state, t, obs, plan, &mut history).map_err(err)?;
    } else {
        apply_file(host, state, t, obs, plan, &mut history).map_err(err)?;
        stop_all(host, &plan.stops).map_err(err)?;
    }
    report
        .duration_ms
        .insert("apply", lap.elapsed().as_millis() as u64);
    let Some(d) = &t.desired else { return Ok(()) };
    if plan.starts.is_empty() {
        return Ok(());
    }
    let lap = Instant::now();
    let mut replaced: Vec<String> = Vec::new();
    for batch in plan.starts.chunks(s.max_parallel) {
        let mut begun = Vec::with_capacity(batch.len());
        for (svc, job) in batch {
            begun.push((svc.clone(), begin(host, svc, *job).map_err(err)?));
        }
        for (svc, previous) in begun {
            replaced.push(svc.clone());
            match wait(host, &svc, d, obs.image_id.clone(), previous, s) {
                Ok(c) => report.converged(&svc, &d.revision, &c),
                Err(why) => {
                    report
                        .duration_ms
                        .insert("converge", lap.elapsed().as_millis() as u64);
                    return Err(fail(
                        host, state, t, obs, &replaced, s, report, &svc, d, &why,
                    ));
                }
            }
        }
    }
    report
        .duration_ms
        .insert("converge", lap.elapsed().as_millis() as u64);
    report.restarted = true;
    if t.wanted == Wanted::RolledBack {
        history.revisions.retain(|r| r.revision != d.revision);
    }
    history.record(record(d, obs.image_id.clone()));
    state
        .save_unit_history(&t.name.file_name(), &history)
        .map_err(|e| e.to_string())
}

fn apply_file(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    plan: &TargetPlan,
    history: &mut UnitHistory,
) -> Result<(), UnitError> {
    for action in &plan.file {
        match action {
            Action::WriteUnit => {
                let Some(d) = &t.desired else { continue };
                if plan.reasons.contains(&Reason::Drift)
                    && let (Some(text), Some(rev)) = (&obs.file_text, &obs.file_revision)
                {
                    history.record_drift(RevisionRecord {
                        revision: rev.clone(),
                        text: text.clone(),
                        image_ref: d.image.to_string(),
                        image_id: None,
                        recorded_at: now_rfc3339(),
                    });
                }
                write_unit(t, &d.text())?;
                history.record(record(d, obs.image_id.clone()));
                state.save_unit_history(&t.name.file_name(), history)?;
            }
            Action::RemoveUnit => {
                remove_file(&t.path)?;
            }
            Action::DaemonReload => {
                link_instances(t, plan)?;
                host.systemd.daemon_reload()?;
            }
            Action::Stop | Action::Start | Action::Restart => {}
        }
    }
    Ok(())
}

/// Creates and removes the boot links of template instances, before the reload that reads them.
fn link_instances(t: &Target, plan: &TargetPlan) -> Result<(), UnitError> {
    for l in &plan.unlink {
        remove_file(l)?;
    }
    for l in &plan.link {
        if let Some(dir) = l.parent() {
            std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
        }
        std::os::unix::fs::symlink(super::links::link_target(t), l)
            .map_err(crate::state::io_err("link", l))?;
    }
    Ok(())
}

fn stop_all(host: &Host, services: &[String]) -> Result<(), UnitError> {
    for svc in services {
        host.systemd.run_job(Job::Stop, std::slice::from_ref(svc))?;
    }
    Ok(())
}

/// Queues a job and returns the invocation that ran before it: only a different one can be
/// the new revision.
fn begin(host: &Host, service: &str, job: Job) -> Result<String, UnitError> {
    let units = [service.to_string()];
    host.systemd.reset_failed(&units)?;
    let previous = host
        .systemd
        .show(&units)?
        .first()
        .map(|st| st.invocation_id().to_string())
        .unwrap_or_default();
    host.systemd.enqueue(job, &units)?;
    Ok(previous)
}

fn wait(
    host: &Host,
    service: &str,
    d: &Desired,
    image_id: Option<String>,
    previous: String,
    s: &Settings,
) -> Result<Converged, String> {
    let exp = Expectation {
        service: service.to_string(),
        revision: d.revision.clone(),
        image_id: image_id.unwrap_or_default(),
        needs_health: d.needs_health,
        previous_invocation: Some(previous).filter(|p| !p.is_empty()),
        min_healthy: s.min_healthy,
        timeout: s.timeout,
    };
    wait_converged(host.systemd, host.podman, host.clock, &exp).map_err(|e| match e {
        crate::converge::WaitError::NotConverged { why, .. } => why,
        other => other.to_string(),
    })
}

/// The failure message of a service that did not converge, after rolling its target back.
#[allow(clippy::too_many_arguments)]
fn fail(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    replaced: &[String],
    s: &Settings,
    report: &mut Report,
    service: &str,
    d: &Desired,
    why: &str,
) -> String {
    let journal = host.systemd.journal_tail(service, JOURNAL_LINES);
    let image = short(obs.image_id.as_deref().unwrap_or("?"));
    let failed = format!(
        "{service}: revision {} with image {image} did not converge: {why}",
        short(&d.revision)
    );
    if !s.rollback {
        return format!(
            "{failed}. rollback is off, so it was left as it is.\nJournal of {service}:\n{journal}"
        );
    }
    let lap = Instant::now();
    let rolled = roll_back(host, state, t, obs, replaced, s);
    report
        .duration_ms
        .insert("rollback", lap.elapsed().as_millis() as u64);
    match rolled {
        Ok(note) => {
            report.rolled_back = true;
            report.actions.push("rollback".into());
            format!("{failed}. {note}\nJournal of {service}:\n{journal}")
        }
        Err(e) => {
            format!("{failed}. The rollback failed too: {e}\nJournal of {service}:\n{journal}")
        }
    }
}

/// Restores the unit text and image that ran before, and brings the `replaced` services back
/// to the state they were in. Services this run never touched are left as they are.
fn roll_back(
    host: &Host,
    state: &StateDir,
    t: &Target,
    obs: &Observation,
    replaced: &[String],
    s: &Settings,
) -> Result<String, String> {
    let Some(failed) = &t.desired else {
        return Ok("nothing to roll back".into());
    };
    let Some(prev_text) = &obs.file_text else {
        stop_all(host, replaced).map_err(|e| e.to_string())?;
        return Err(
            "there was no earlier unit file to roll back to, so its services were stopped".into(),
        );
    };
    let prev_unit = UnitFile::parse(prev_text).map_err(|e| e.to_string())?;
    let prev_image = prev_unit
        .value("Container", "Image")
        .unwrap_or_default()
        .to_string();
    let prev = Desired::from_unit(
        prev_unit,
        ImageRef::parse(&prev_image).map_err(|e| e.to_string())?,
    );
    let mut history = state
        .unit_history(&t.name.file_name())
        .map_err(|e| e.to_string())?;
    let prev_id = obs
        .running_image_id()
        .or_else(|| obs.history.current().and_then(|r| r.image_id.clone()));
    if obs.file_revision.as_deref() != Some(failed.revision.as_str()) {
        write_unit(t, &prev.text()).map_err(|e| e.to_string())?;
    }
    history.revisions.retain(|r| r.revision != failed.revision);
    history.record(record(&prev, prev_id.clone()));
    state
        .save_unit_history(&t.name.file_name(), &history)
        .map_err(|e| e.to_string())?;
    if let Some(id) = &prev_id {
        host.podman
            .tag(id, &prev_image)
            .map_err(|e| e.to_string())?;
    }
    host.systemd.daemon_reload().map_err(|e| e.to_string())?;
    let image_id = match prev_id {
        Some(id) => Some(id),
        None => host
            .podman
            .image_id(&prev_image)
            .map_err(|e| e.to_string())?,
    };
    let mut back = Vec::new();
    for svc in replaced {
        if obs.service(svc).is_some_and(|o| o.active) {
            let previous = begin(host, svc, Job::Restart).map_err(|e| e.to_string())?;
            wait(host, svc, &prev, image_id.clone(), previous, s).map_err(|why| {
                format!("the previous revision of {svc} did not come back either: {why}")
            })?;
            back.push(svc.clone());
        } else {
            stop_all(host, std::slice::from_ref(svc)).map_err(|e| e.to_string())?;
        }
    }
    let running = if back.is_empty() {
        "nothing had run before, so it is stopped again".to_string()
    } else {
        format!("{} runs it again", back.join(", "))
    };
    Ok(format!(
        "Rolled back to revision {} (image {}); {running}.",
        short(&prev.revision),
        short(image_id.as_deref().unwrap_or("?"))
    ))
}

fn write_unit(t: &Target, text: &str) -> Result<(), crate::state::StateError> {
    if let Some(dir) = t.path.parent() {
        std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
    }
    atomic_write(&t.path, text.as_bytes(), 0o644)
}

fn record(d: &Desired, image_id: Option<String>) -> RevisionRecord {
    RevisionRecord {
        revision: d.revision.clone(),
        text: d.text(),
        image_ref: d.image.to_string(),
        image_id,
        recorded_at: now_rfc3339(),
    }
}

impl Report {
    /// Notes a service that converged on `revision`.
    fn converged(&mut self, service: &str, revision: &str, c: &Converged) {
        if self.instances.is_empty() && self.service == service {
            self.container_id = Some(c.container_id.clone());
            self.invocation_id = Some(c.invocation_id.clone());
            self.active = true;
            return;
        }
        let entry = InstanceReport {
            service: service.to_string(),
            active: true,
            container_id: Some(c.container_id.clone()),
            invocation_id: Some(c.invocation_id.clone()),
            revision: Some(revision.to_string()),
            replaced: true,
        };
        match self.instances.iter().position(|i| i.service == service) {
            Some(i) => self.instances[i] = entry,
            None => self.instances.push(entry),
        }
    }
}
