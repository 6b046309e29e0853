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

/// `localhost/refit-keep/NAME-HASH:previous`, with NAME reduced to what a repository allows
/// and HASH of the full name, so `app` and `app@` (or `App`) never share one tag.
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
    let hash = crate::unit::revision::short_hash(t.name.stem());
    format!(
        "localhost/refit-keep/{}-{hash}:previous",
        name.trim_matches('-')
    )
}

pub type Work = (Target, Observation, TargetPlan, Report);

/// What carries out a run's plans: the host, the state dir and the run's settings, so every
/// step and the rollback share them instead of passing them along.
pub struct Applier<'a> {
    pub host: &'a Host<'a>,
    pub state: &'a StateDir,
    pub settings: &'a Settings,
}

/// Why a target's change did not go through.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A service did not converge on the new revision.
    #[error("{service}: revision {revision} with image {image} did not converge: {why}")]
    NotConverged {
        service: String,
        revision: String,
        image: String,
        why: String,
    },
    /// A call to systemd, podman or the state dir failed on the way.
    #[error("{unit}: {source}")]
    Step {
        unit: String,
        #[source]
        source: UnitError,
    },
}

impl Applier<'_> {
    /// Applies every target in order. On a failure, the failed target is rolled back, and so
    /// is every target this run changed before it, newest first. Returns the failure message.
    pub fn apply_all(&self, work: &mut [Work]) -> Option<String> {
        let mut done: Vec<usize> = Vec::new();
        for i in 0..work.len() {
            let (t, obs, plan, report) = &mut work[i];
            if !plan.changes() {
                continue;
            }
            let Err(failure) = self.apply_target(t, obs, plan, report) else {
                done.push(i);
                continue;
            };
            let mut msg = failure;
            if self.settings.rollback && !done.is_empty() {
                msg.push_str("\nUnits this run had already changed are rolled back too:");
                for &j in done.iter().rev() {
                    let (t, obs, plan, report) = &mut work[j];
                    let Some(d) = &t.desired else { continue };
                    let failed = (d.revision.clone(), obs.image_id.clone());
                    let started: Vec<String> =
                        plan.starts.iter().map(|(svc, _)| svc.clone()).collect();
                    let note = self.roll_back_noted(t, obs, &failed, &started, report);
                    msg.push_str(&format!("\n- {}: {note}", t.name.file_name()));
                }
            }
            return Some(msg);
        }
        None
    }

    /// Carries out one target's plan. Any failure once the host was touched (the file written,
    /// a job queued, a service that did not converge) rolls the target back, when rollback is
    /// on, before the message is returned.
    fn apply_target(
        &self,
        t: &Target,
        obs: &Observation,
        plan: &TargetPlan,
        report: &mut Report,
    ) -> Result<(), String> {
        let mut replaced: Vec<String> = Vec::new();
        let result = self.change(t, obs, plan, report, &mut replaced);
        let Err(e) = result else { return Ok(()) };
        let service = match &e {
            ApplyError::NotConverged { service, .. } => service.clone(),
            ApplyError::Step { .. } => t.name.service(),
        };
        let journal = self.host.systemd.journal_tail(&service, JOURNAL_LINES);
        let journal = if journal.trim().is_empty() {
            String::new()
        } else {
            format!("\nJournal of {service}:\n{journal}")
        };
        let Some(d) = t.desired.as_ref().filter(|_| self.settings.rollback) else {
            return Err(format!(
                "{e}. rollback is off, so it was left as it is.{journal}"
            ));
        };
        let failed = (d.revision.clone(), obs.image_id.clone());
        // Only services this run queued a job for go back; a failure before any job leaves
        // the target's services as they ran, but its file is still put back.
        let lap = Instant::now();
        let note = self.roll_back_noted(t, obs, &failed, &replaced, report);
        report
            .duration_ms
            .insert("rollback", lap.elapsed().as_millis() as u64);
        Err(format!("{e}. {note}{journal}"))
    }

    fn change(
        &self,
        t: &Target,
        obs: &Observation,
        plan: &TargetPlan,
        report: &mut Report,
        replaced: &mut Vec<String>,
    ) -> Result<(), ApplyError> {
        let step = |source: UnitError| ApplyError::Step {
            unit: t.name.file_name(),
            source,
        };
        let lap = Instant::now();
        let mut history = obs.history.clone();
        // Removing a unit stops its services first; otherwise the new file comes first.
        if t.wanted == Wanted::Absent {
            self.stop_all(&plan.stops).map_err(step)?;
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
        } else {
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
            self.stop_all(&plan.stops).map_err(step)?;
        }
        report
            .duration_ms
            .insert("apply", lap.elapsed().as_millis() as u64);
        let Some(d) = &t.desired else { return Ok(()) };
        if plan.starts.is_empty() {
            return Ok(());
        }
        let lap = Instant::now();
        for batch in plan.starts.chunks(self.settings.max_parallel) {
            let mut begun = Vec::with_capacity(batch.len());
            for (svc, job) in batch {
                replaced.push(svc.clone());
                begun.push((svc.clone(), self.begin(svc, *job).map_err(step)?));
            }
            for (svc, previous) in begun {
                let waited = self.wait(&svc, d, obs.image_id.clone(), previous);
                report
                    .duration_ms
                    .insert("converge", lap.elapsed().as_millis() as u64);
                let c = waited.map_err(|why| ApplyError::NotConverged {
                    service: svc.clone(),
                    revision: short(&d.revision).to_string(),
                    image: short(obs.image_id.as_deref().unwrap_or("?")).to_string(),
                    why,
                })?;
                report.converged(&svc, &d.revision, &c);
            }
        }
        report.restarted = true;
        if t.wanted == Wanted::RolledBack
            && let Some((rev, image)) = obs.running_pair()
        {
            history.forget(&rev, image.as_deref());
        }
        history.record(record(d, obs.image_id.clone()));
        self.state
            .save_unit_history(&t.name.file_name(), &history)
            .map_err(|e| step(e.into()))
    }

    fn apply_file(
        &self,
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
                    // Written, not yet run: what a later rollback returns to stays the
                    // revision that last converged.
                    history.written = Some(d.revision.clone());
                    self.state.save_unit_history(&t.name.file_name(), history)?;
                    write_unit(t, &d.text())?;
                }
                Action::RemoveUnit => {
                    remove_file(&t.path)?;
                }
                Action::DaemonReload => {
                    link_instances(t, plan)?;
                    self.host.systemd.daemon_reload()?;
                }
                Action::Stop | Action::Start | Action::Restart => {}
            }
        }
        Ok(())
    }

    pub(super) fn stop_all(&self, services: &[String]) -> Result<(), UnitError> {
        for svc in services {
            self.host
                .systemd
                .run_job(Job::Stop, std::slice::from_ref(svc))?;
        }
        Ok(())
    }

    /// Queues a job and returns the invocation that ran before it: only a different one can
    /// be the new revision.
    pub(super) fn begin(&self, service: &str, job: Job) -> Result<String, UnitError> {
        let units = [service.to_string()];
        self.host.systemd.reset_failed(&units)?;
        let mut status = self.host.systemd.show(&units)?.into_iter().next();
        let mut job = job;
        // A unit between crash-loop restarts has one of its own scheduled; it would run
        // beside this job and pass for a crash loop of the new revision. Stop it first.
        if status
            .as_ref()
            .is_some_and(|st| st.get("SubState") == "auto-restart")
        {
            self.host.systemd.run_job(Job::Stop, &units)?;
            status = self.host.systemd.show(&units)?.into_iter().next();
            job = Job::Start;
        }
        let previous = status
            .map(|st| st.invocation_id().to_string())
            .unwrap_or_default();
        self.host.systemd.enqueue(job, &units)?;
        Ok(previous)
    }

    pub(super) fn wait(
        &self,
        service: &str,
        d: &Desired,
        image_id: Option<String>,
        previous: String,
    ) -> Result<Converged, String> {
        let exp = Expectation {
            service: service.to_string(),
            revision: d.revision.clone(),
            image_id: image_id.unwrap_or_default(),
            needs_health: d.needs_health,
            previous_invocation: Some(previous).filter(|p| !p.is_empty()),
            min_healthy: self.settings.min_healthy,
            timeout: self.settings.timeout,
        };
        let h = self.host;
        wait_converged(h.systemd, h.podman, h.clock, &exp).map_err(|e| match e {
            crate::converge::WaitError::NotConverged { why, .. } => why,
            other => other.to_string(),
        })
    }
}

/// Creates and removes the boot links of template instances, before the reload that reads them.
fn link_instances(t: &Target, plan: &TargetPlan) -> Result<(), UnitError> {
    for l in &plan.unlink {
        remove_file(l)?;
    }
    for l in &plan.link {
        super::links::ensure_link_dir(l)?;
        std::os::unix::fs::symlink(super::links::link_target(t), l)
            .map_err(crate::state::io_err("link", l))?;
    }
    Ok(())
}

pub(super) fn write_unit(t: &Target, text: &str) -> Result<(), crate::state::StateError> {
    if let Some(dir) = t.path.parent() {
        std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
    }
    atomic_write(&t.path, text.as_bytes(), 0o644)
}

pub(super) fn record(d: &Desired, image_id: Option<String>) -> RevisionRecord {
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
