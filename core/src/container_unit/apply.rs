//! Changing the host: fetch images, carry out the plans in order, replace instances in
//! health-gated batches, and roll back on failure.

use super::failure::{Aftermath, ApplyError, Journal, RunFailed, TargetFailed, UnitNote};
use super::jobs::{Jobs, record, write_unit};
use super::observe::{Observation, RevisionImage};
use super::report::Report;
use super::rollback::Rollback;
use super::target::{Target, TargetPlan};
use super::work::Work;
use super::{Host, Settings, UnitError};
use crate::converge::{WaitError, short};
use crate::plan::{Action, Reason, Wanted};
use crate::state::{RevisionRecord, StateDir, UnitHistory, remove_file};
use crate::time::now_rfc3339;
use std::time::Instant;

/// How many journal lines a failure message carries.
const JOURNAL_LINES: usize = 25;

/// What carries out a run's plans: the host, the state dir and the run's settings, so every
/// step and the rollback share them instead of passing them along.
pub struct Applier<'a> {
    pub host: &'a Host<'a>,
    pub state: &'a StateDir,
    pub settings: &'a Settings,
}

impl Applier<'_> {
    fn jobs(&self) -> Jobs<'_> {
        Jobs {
            host: self.host,
            settings: self.settings,
        }
    }

    /// The rollback of a target this run changed: from its desired revision, of the
    /// `replaced` services. None for a target that has no desired revision (an absent one).
    fn rollback<'b>(
        &'b self,
        target: &'b Target,
        observed: &'b Observation,
        replaced: &'b [String],
    ) -> Option<Rollback<'b>> {
        let d = target.desired.as_ref()?;
        Some(Rollback {
            jobs: self.jobs(),
            state: self.state,
            target,
            observed,
            failed: RevisionImage {
                revision: d.revision.clone(),
                image_id: observed.image_id.clone(),
            },
            replaced,
        })
    }

    /// Applies every target once those it depends on (After=, Requires=, Wants=, PartOf= on
    /// their services) serve, up to `max_parallel_units` at once: targets that do not depend
    /// on each other start and are health-gated together, and a dependent starts while what it
    /// depends on holds for `min_healthy_time`. On a failure nothing more starts; what runs
    /// finishes. The failed target is rolled back, and so is every target
    /// this run changed, newest first. A restore goes on past a failure instead, and reports
    /// every one.
    pub fn apply_all(&self, work: &mut [Work]) -> Result<(), RunFailed> {
        let deps = dependencies(work);
        let walked = crate::parallel::walk_releasing(
            work.iter_mut().collect(),
            &deps,
            self.settings.max_parallel_units,
            |w: &mut Work, release| {
                if !w.plan.changes() {
                    return Ok(false);
                }
                // A restore goes on past a failure: its walk is never stopped.
                let failed = || {
                    if !self.settings.restoring {
                        release.refused();
                    }
                };
                let walk = InWalk {
                    serving: &|| release.now(),
                    failed: &failed,
                };
                self.apply_target(&w.target, &w.observed, &w.plan, &mut w.report, &walk)
                    .map(|()| true)
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
        // A dependent started beside its dependency's hold may fail because that one went back:
        // the failure first in dependency order (the work's order) is the cause. What changed
        // goes back newest in that order first.
        failures.sort_by_key(|(i, _)| *i);
        done.sort_unstable();
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
        let mut also_rolled_back: Vec<UnitNote> = failures
            .map(|(i, f)| UnitNote {
                unit: work[i].target.name.file_name(),
                note: format!("failed too: {f}"),
            })
            .collect();
        if self.settings.rollback {
            for &j in done.iter().rev() {
                let w = &mut work[j];
                let started: Vec<String> =
                    w.plan.starts.iter().map(|s| s.service.clone()).collect();
                let Some(rollback) = self.rollback(&w.target, &w.observed, &started) else {
                    continue;
                };
                let note = rollback.noted(&mut w.report);
                also_rolled_back.push(UnitNote {
                    unit: w.target.name.file_name(),
                    note,
                });
            }
        }
        // A network made anew stopped its users: they run again, whatever failed. Its older
        // text, when it went back, makes it anew once more.
        for &j in &done {
            let w = &work[j];
            if let Some(r) = &w.plan.recreate {
                let back = w.report.result.rolled_back;
                let note = super::network_change::after_failure(self.host, r, &w.report, back);
                also_rolled_back.push(UnitNote {
                    unit: w.target.name.file_name(),
                    note,
                });
            }
        }
        Err(RunFailed {
            failed: Box::new(failed),
            also_rolled_back,
            also_failed: Vec::new(),
        })
    }

    /// Carries out one target's plan, telling its walk when its last started service first
    /// serves and when it failed. Any failure once the host was touched (the file written, a
    /// job queued, a service that did not converge) rolls the target back, when rollback is on,
    /// before the failure is returned.
    fn apply_target(
        &self,
        t: &Target,
        obs: &Observation,
        plan: &TargetPlan,
        report: &mut Report,
        walk: &InWalk,
    ) -> Result<(), TargetFailed> {
        let mut replaced: Vec<String> = Vec::new();
        let Err(cause) = self.change(t, obs, plan, report, &mut replaced, walk.serving) else {
            return Ok(());
        };
        // Nothing more starts on a unit known to fail, also while it goes back.
        (walk.failed)();
        let service = match &cause {
            ApplyError::NotConverged { service, .. } => service.clone(),
            ApplyError::Step { .. } => t.name.service(),
        };
        let journal = Journal {
            text: self.host.systemd.journal_tail(&service, JOURNAL_LINES),
            service,
        };
        // Only services this run queued a job for go back; a failure before any job leaves the
        // target's services as they ran, but its file is still put back.
        let rollback = Some(self)
            .filter(|a| a.settings.rollback)
            .and_then(|a| a.rollback(t, obs, &replaced));
        let aftermath = match rollback {
            None => Aftermath::LeftAsIs,
            Some(rollback) => {
                let lap = Instant::now();
                let note = rollback.noted(report);
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
        serving: &dyn Fn(),
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
            self.jobs().stop_all(&plan.stops).map_err(step)?;
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
        } else {
            self.apply_file(t, obs, plan, &mut history).map_err(step)?;
            self.jobs().stop_all(&plan.stops).map_err(step)?;
            // The new text is loaded: the network is made anew before its users start.
            if let Some(r) = &plan.recreate {
                report.stopped_users =
                    super::network_change::recreate(self.host, r).map_err(step)?;
            }
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
        // What depends on the target may start once its last service serves: every service
        // before it has then held for `min_healthy_time`, and the last one's hold goes on.
        let last = plan.starts.last().map(|s| s.service.clone());
        for batch in plan.starts.chunks(self.settings.max_parallel) {
            let mut begun = Vec::with_capacity(batch.len());
            for start in batch {
                let svc = &start.service;
                replaced.push(svc.clone());
                begun.push((
                    svc.clone(),
                    self.jobs().begin(svc, start.job).map_err(step)?,
                ));
            }
            for (svc, previous) in begun {
                let told: &dyn Fn() = if Some(&svc) == last.as_ref() {
                    serving
                } else {
                    &|| {}
                };
                let waited = self
                    .jobs()
                    .wait(&svc, d, obs.image_id.clone(), previous, told);
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
            && let Some(ran) = obs.running_pair()
        {
            history.forget(&ran.revision, ran.image_id.as_deref());
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
}

/// How a target's work speaks to the walk it is part of.
struct InWalk<'a> {
    /// Its dependents may start: its last started service serves.
    serving: &'a dyn Fn(),
    /// It failed: nothing more may start.
    failed: &'a dyn Fn(),
}

/// For each target, the earlier targets that run a service it is ordered after. The work is in
/// dependency order already, so only earlier ones count: a cycle, broken there, stays broken.
fn dependencies(work: &[Work]) -> Vec<Vec<usize>> {
    let mut runs: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, w) in work.iter().enumerate() {
        let t = &w.target;
        for s in t.services().into_iter().chain([t.name.service()]) {
            runs.entry(s).or_insert(i);
        }
    }
    work.iter()
        .enumerate()
        .map(|(i, w)| {
            w.target
                .after
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
