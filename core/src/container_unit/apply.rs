//! Changing the host: fetch images, carry out the plans in order, replace instances in
//! health-gated batches, and roll back on failure.

use super::failure::{Aftermath, ApplyError, Journal, RunFailed, TargetFailed};
use super::observe::Observation;
use super::report::Report;
use super::rollback::Undo;
use super::target::{Desired, Target, TargetPlan};
use super::{Host, Settings, UnitError};
use crate::converge::{Converged, Expectation, WaitError, short, wait_converged};
use crate::plan::{Action, Reason, Wanted};
use crate::state::{RevisionRecord, StateDir, UnitHistory, atomic_write, remove_file};
use crate::systemd::Job;
use crate::time::now_rfc3339;
use std::time::Instant;

/// How many journal lines a failure message carries.
const JOURNAL_LINES: usize = 25;

pub type Work = (Target, Observation, TargetPlan, Report);

/// What carries out a run's plans: the host, the state dir and the run's settings, so every
/// step and the rollback share them instead of passing them along.
pub struct Applier<'a> {
    pub host: &'a Host<'a>,
    pub state: &'a StateDir,
    pub settings: &'a Settings,
}

impl Applier<'_> {
    /// Applies every target once those it depends on (After=, Requires=, Wants=, PartOf= on
    /// their services) are converged, up to `max_parallel_units` at once: targets that do not
    /// depend on each other start and are health-gated together. On a failure nothing more
    /// starts; what runs finishes. The failed target is rolled back, and so is every target
    /// this run changed, newest first. A restore goes on past a failure instead, and reports
    /// every one.
    pub fn apply_all(&self, work: &mut [Work]) -> Result<(), RunFailed> {
        let deps = dependencies(work);
        let walked = crate::parallel::walk(
            work.iter_mut().collect(),
            &deps,
            self.settings.max_parallel_units,
            |(t, obs, plan, report): &mut Work| {
                if !plan.changes() {
                    return Ok(false);
                }
                self.apply_target(t, obs, plan, report).map(|()| true)
            },
            |r| self.settings.restoring || r.is_ok(),
        );
        let mut done: Vec<usize> = Vec::new();
        let mut failures = Vec::new();
        for w in walked {
            match w.answer {
                Ok(true) => done.push(w.index),
                Ok(false) => {}
                Err(failed) => failures.push((w.index, failed)),
            }
        }
        let mut failures = failures.into_iter();
        let Some((_, failed)) = failures.next() else {
            return Ok(());
        };
        if self.settings.restoring {
            // The others still went back: a unit left on the failed release helps no one.
            return Err(RunFailed {
                failed: Box::new(failed),
                also_rolled_back: Vec::new(),
                also_failed: failures.map(|(_, f)| f.to_string()).collect(),
            });
        }
        // A target that failed beside the first was rolled back by its own failure.
        let mut also_rolled_back: Vec<(String, String)> = failures
            .map(|(i, f)| (work[i].0.name.file_name(), format!("failed too: {f}")))
            .collect();
        if self.settings.rollback {
            for &j in done.iter().rev() {
                let (t, obs, plan, report) = &mut work[j];
                let Some(d) = &t.desired else { continue };
                let started: Vec<String> = plan.starts.iter().map(|(svc, _)| svc.clone()).collect();
                let undo = Undo {
                    t,
                    obs,
                    failed: (d.revision.clone(), obs.image_id.clone()),
                    replaced: &started,
                };
                also_rolled_back.push((t.name.file_name(), self.roll_back_noted(&undo, report)));
            }
        }
        Err(RunFailed {
            failed: Box::new(failed),
            also_rolled_back,
            also_failed: Vec::new(),
        })
    }

    /// Carries out one target's plan. Any failure once the host was touched (the file written,
    /// a job queued, a service that did not converge) rolls the target back, when rollback is
    /// on, before the failure is returned.
    fn apply_target(
        &self,
        t: &Target,
        obs: &Observation,
        plan: &TargetPlan,
        report: &mut Report,
    ) -> Result<(), TargetFailed> {
        let mut replaced: Vec<String> = Vec::new();
        let Err(cause) = self.change(t, obs, plan, report, &mut replaced) else {
            return Ok(());
        };
        let service = match &cause {
            ApplyError::NotConverged { service, .. } => service.clone(),
            ApplyError::Step { .. } => t.name.service(),
        };
        let journal = Journal {
            text: self.host.systemd.journal_tail(&service, JOURNAL_LINES),
            service,
        };
        let aftermath = match t.desired.as_ref().filter(|_| self.settings.rollback) {
            None => Aftermath::LeftAsIs,
            Some(d) => {
                // Only services this run queued a job for go back; a failure before any job
                // leaves the target's services as they ran, but its file is still put back.
                let undo = Undo {
                    t,
                    obs,
                    failed: (d.revision.clone(), obs.image_id.clone()),
                    replaced: &replaced,
                };
                let lap = Instant::now();
                let note = self.roll_back_noted(&undo, report);
                report.result.duration_ms.rollback = Some(lap.elapsed().as_millis() as u64);
                Aftermath::RolledBack(note)
            }
        };
        Err(TargetFailed {
            cause: Box::new(cause),
            aftermath,
            journal,
        })
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
        let socket = super::socket::prepare(self.host, t).map_err(step)?;
        // A held image is installed with its unit: its tag moves just before the restart, as
        // a staged text is written just before it.
        if let Some(held) = obs.held.as_ref().filter(|_| t.wanted != Wanted::Present) {
            crate::podman::point_tag(self.host.podman, &held.image, &held.id)
                .map_err(|e| step(e.into()))?;
        }
        // Removing a unit stops its services first; otherwise the new file comes first.
        if t.wanted == Wanted::Absent {
            self.stop_all(&plan.stops).map_err(step)?;
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
        } else {
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
            self.stop_all(&plan.stops).map_err(step)?;
        }
        let reloaded = plan.file.contains(&Action::DaemonReload);
        report.result.socket_replaced =
            super::socket::finish(self.host, t, reloaded, socket).map_err(step)?;
        report.result.duration_ms.apply = Some(lap.elapsed().as_millis() as u64);
        let Some(d) = &t.desired else { return Ok(()) };
        if plan.starts.is_empty() {
            // A network, volume or image takes a new text without a restart: the text is then
            // the revision it has, and a rollback needs it recorded.
            if !d.kind.runs_container() && plan.file.contains(&Action::WriteUnit) {
                history.record(record(d, None));
                self.state
                    .save_unit_history(&t.name.file_name(), &history)
                    .map_err(|e| step(e.into()))?;
            }
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
                report.result.duration_ms.converge = Some(lap.elapsed().as_millis() as u64);
                let c = waited.map_err(|e| match e {
                    WaitError::NotConverged { why, .. } => ApplyError::NotConverged {
                        service: svc.clone(),
                        revision: short(&d.revision).to_string(),
                        image: short(obs.image_id.as_deref().unwrap_or("?")).to_string(),
                        why,
                    },
                    other => step(other.into()),
                })?;
                report.converged(&svc, &d.revision, &c);
            }
        }
        report.result.restarted = true;
        // A rollback to a named revision keeps the one it left, to go forward to again.
        if t.wanted == Wanted::RolledBack
            && t.rollback_to.is_none()
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
                            image_ref: d.image_ref(),
                            image_id: None,
                            recorded_at: now_rfc3339(),
                            stream: None,
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
        if status.as_ref().is_some_and(in_transition) {
            // systemd is starting or stopping the unit on its own (a crash-loop restart, or
            // the start after one). A start would join that start, whose invocation began
            // before this job and so never looks new; a restart would run beside it and pass
            // for a crash loop. Stop it first, and start it afresh.
            self.host.systemd.run_job(Job::Stop, &units)?;
            status = self.host.systemd.show(&units)?.into_iter().next();
            job = Job::Start;
        } else if job == Job::Start
            && status
                .as_ref()
                .is_some_and(|st| st.active_state() == "active")
        {
            // Started since it was observed (systemd's own restart): a start of a unit that
            // runs changes nothing, so no new invocation would ever come.
            job = Job::Restart;
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
    ) -> Result<Converged, WaitError> {
        let exp = Expectation {
            service: service.to_string(),
            revision: d.revision.clone(),
            image_id: image_id.unwrap_or_default(),
            needs_health: d.needs_health,
            runs_container: d.kind.runs_container(),
            previous_invocation: Some(previous).filter(|p| !p.is_empty()),
            min_healthy: self.settings.min_healthy,
            timeout: self.settings.timeout,
        };
        let h = self.host;
        wait_converged(h.systemd, h.podman, h.clock, &exp)
    }
}

/// Whether systemd has a start or stop of the unit under way that refit did not ask for.
fn in_transition(st: &crate::systemd::UnitStatus) -> bool {
    st.get("SubState") == "auto-restart"
        || matches!(
            st.active_state(),
            "activating" | "deactivating" | "reloading"
        )
}

/// For each target, the earlier targets that run a service it is ordered after. The work is in
/// dependency order already, so only earlier ones count: a cycle, broken there, stays broken.
fn dependencies(work: &[Work]) -> Vec<Vec<usize>> {
    let mut runs: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, (t, ..)) in work.iter().enumerate() {
        for s in t.services().into_iter().chain([t.name.service()]) {
            runs.entry(s).or_insert(i);
        }
    }
    work.iter()
        .enumerate()
        .map(|(i, (t, ..))| {
            t.after
                .iter()
                .filter_map(|s| runs.get(s).copied())
                .filter(|&j| j < i)
                .collect()
        })
        .collect()
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
        image_ref: d.image_ref(),
        image_id,
        recorded_at: now_rfc3339(),
        stream: None,
    }
}
