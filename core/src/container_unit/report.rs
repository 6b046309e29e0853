//! What `container_unit` reports: one `Report` per target, and the module's outcome. A single
//! unit's report is the result itself; a `units` run returns them as a list.

use super::fetch::Fetched;
use super::observe::Observation;
use super::target::{Target, TargetPlan};
use crate::ansible::{Diff, Outcome};
use crate::converge::Converged;
use crate::plan::{Action, Wanted};
use crate::results::container_unit::{
    BatchResult, Durations, ImageResult, InstanceResult, RevisionPair, UnitResult,
    restarted_services,
};

/// A unit's result, with what the module's outcome needs of it besides: whether it changed,
/// its diff, and the message line.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub result: UnitResult,
    pub changed: bool,
    pub diff: Option<Diff>,
    summary: String,
    /// For a `.network` this run made anew: the users that ran and were stopped for it, to be
    /// started again should the run fail before their own restarts.
    pub stopped_users: Vec<String>,
}

impl Report {
    pub fn new(t: &Target, obs: &Observation, plan: &TargetPlan, fetched: Fetched) -> Self {
        let template = t.name.is_template();
        let pull = fetched.pulled || fetched.pull_due;
        let registry_error = fetched.registry_error.clone();
        // A pull, done or (in check mode) due, comes before everything else.
        let mut actions: Vec<String> = pull.then(|| "pull".to_string()).into_iter().collect();
        // Boot links are made just before the reload that reads them.
        let links = plan
            .link
            .iter()
            .map(|l| format!("link {}", l.display()))
            .chain(
                plan.unlink
                    .iter()
                    .map(|l| format!("unlink {}", l.display())),
            );
        let mut file: Vec<String> = Vec::new();
        let mut links = Some(links);
        for a in &plan.file {
            if *a == Action::DaemonReload
                && let Some(l) = links.take()
            {
                file.extend(l);
            }
            file.push(a.as_str().to_string());
        }
        let job = |verb: &str, svc: &str| {
            if template {
                format!("{verb} {svc}")
            } else {
                verb.to_string()
            }
        };
        if t.wanted == Wanted::Absent {
            actions.extend(plan.stops.iter().map(|s| job("stop", s)));
            actions.extend(file);
        } else {
            actions.extend(file);
            actions.extend(plan.stops.iter().map(|s| job("stop", s)));
        }
        actions.extend(plan.starts.iter().map(|s| job(s.job.verb(), &s.service)));
        // Taking a unit over changes no file and no service, only what refit has recorded.
        let adopted = obs.takeover.adopted && !plan.changes();
        if adopted {
            actions.push("adopt".to_string());
        }
        let kept_as_is = obs.takeover.unlabelled && !plan.file.contains(&Action::WriteUnit);
        let first = obs.services.first();
        let instances = if template {
            obs.services
                .iter()
                .map(|s| InstanceResult {
                    service: s.service.clone(),
                    active: s.active,
                    container_id: s.container.as_ref().map(|c| c.id.clone()),
                    invocation_id: Some(s.invocation_id.clone()).filter(|i| !i.is_empty()),
                    revision: s.container.as_ref().and_then(|c| c.revision.clone()),
                    replaced: false,
                })
                .collect()
        } else {
            Vec::new()
        };
        let changed = !actions.is_empty();
        let summary = summary(t, plan, &actions);
        let result = UnitResult {
            unit: t.name.file_name(),
            service: t.name.service(),
            path: t.path.display().to_string(),
            state: t.wanted,
            active: obs.services.iter().any(|s| s.active),
            revision: RevisionPair {
                before: obs.file_revision.clone(),
                after: t
                    .desired
                    .as_ref()
                    .map(|d| d.revision.clone())
                    .filter(|_| t.wanted != Wanted::Absent),
            },
            image: ImageResult {
                reference: t
                    .desired
                    .as_ref()
                    .and_then(|d| d.image.as_ref().map(ToString::to_string)),
                previous_id: obs.running_image_id(),
                id: obs.image_id.clone(),
                pulled: fetched.pulled,
                newer_available: obs.newer_image,
                registry_error,
            },
            restart_needed: plan.restart_needed,
            start_needed: plan.start_needed,
            reasons: plan.reasons.clone(),
            actions,
            container_id: if template {
                None
            } else {
                first.and_then(|s| s.container.as_ref().map(|c| c.id.clone()))
            },
            invocation_id: if template {
                None
            } else {
                first
                    .map(|s| s.invocation_id.clone())
                    .filter(|i| !i.is_empty())
            },
            instances,
            held: plan.held.clone(),
            adopted,
            ..UnitResult::default()
        };
        Report {
            result,
            changed,
            // A file taken over as it is stays as its tool wrote it: there is nothing to show.
            diff: diff(t, obs).filter(|_| !kept_as_is),
            summary,
            stopped_users: Vec::new(),
        }
    }
}

fn diff(t: &Target, obs: &Observation) -> Option<Diff> {
    let before = obs.file_text.clone().unwrap_or_default();
    let after = match t.wanted {
        Wanted::Absent => String::new(),
        _ => t
            .desired
            .as_ref()
            .map(|d| d.text())
            .unwrap_or_else(|| before.clone()),
    };
    (before != after).then(|| Diff {
        before,
        after,
        before_header: format!("{} (on disk)", t.path.display()),
        after_header: format!("{} (desired)", t.path.display()),
    })
}

fn summary(t: &Target, plan: &TargetPlan, actions: &[String]) -> String {
    if actions.is_empty() {
        let extra = if plan.restart_needed {
            "; a restart is needed to run it"
        } else {
            ""
        };
        return format!("{} is converged{extra}", t.name.service());
    }
    if plan.reasons.is_empty() {
        return format!("{}: {{verb}} {}", t.name.service(), actions.join(", "));
    }
    let reasons: Vec<&str> = plan.reasons.iter().map(|r| r.as_str()).collect();
    format!(
        "{}: {{verb}} {} ({})",
        t.name.service(),
        actions.join(", "),
        reasons.join(", ")
    )
}

/// How the module was asked: for one unit or a `units` list, and whether in check mode.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    pub batch: bool,
    pub check: bool,
}

/// The module's outcome from its reports: flat for one unit, a list for a `units` run.
pub fn outcome(
    mut reports: Vec<Report>,
    asked: Asked,
    failure: Option<String>,
    total_ms: u64,
) -> Outcome {
    let Asked { batch, check } = asked;
    let verb = if check { "would" } else { "did" };
    let changed = reports.iter().any(|r| r.changed);
    let msg = reports
        .iter()
        .filter(|r| r.changed || !batch)
        .map(|r| r.summary.replace("{verb}", verb))
        .collect::<Vec<_>>()
        .join("; ");
    let diffs: Vec<Diff> = reports.iter().filter_map(|r| r.diff.clone()).collect();
    let warnings: Vec<String> = reports
        .iter()
        .filter_map(|r| r.result.image.registry_error.clone())
        .collect();
    let mut out = if batch {
        let units: Vec<UnitResult> = reports.into_iter().map(|r| r.result).collect();
        let data = BatchResult {
            restarted_services: restarted_services(&units),
            restart_needed: units.iter().any(|u| u.restart_needed),
            start_needed: units.iter().any(|u| u.start_needed),
            rolled_back: units.iter().any(|u| u.rolled_back),
            duration_ms: Durations {
                total: Some(total_ms),
                ..Durations::default()
            },
            units,
        };
        let msg = if msg.is_empty() {
            format!("all {} units are converged", data.units.len())
        } else {
            msg
        };
        Outcome::new(changed, msg).with_data(&data)
    } else {
        let mut r = reports.remove(0).result;
        r.duration_ms.total = Some(total_ms);
        Outcome::new(changed, msg).with_data(&r)
    };
    out.diff = diffs;
    out.warnings = warnings;
    match failure {
        Some(f) => out.failed(f),
        None => out,
    }
}

impl Report {
    /// The unit's new text goes to the stage (its plan deferred the file actions): that is
    /// the change this run makes, after any pull.
    pub(super) fn staged(&mut self, t: &Target, plan: &TargetPlan) {
        let actions = &mut self.result.actions;
        let at = usize::from(actions.first().is_some_and(|a| a == "pull"));
        actions.insert(at, "stage_unit".to_string());
        self.result.staged = true;
        self.changed = true;
        self.summary = summary(t, plan, actions);
    }

    /// Notes a service that converged on `revision`.
    pub(super) fn converged(&mut self, service: &str, revision: &str, c: &Converged) {
        if self.result.instances.is_empty() && self.result.service == service {
            self.result.container_id = Some(c.container_id.clone());
            self.result.invocation_id = Some(c.invocation_id.clone());
            self.result.active = true;
            return;
        }
        let entry = InstanceResult {
            service: service.to_string(),
            active: true,
            container_id: Some(c.container_id.clone()),
            invocation_id: Some(c.invocation_id.clone()),
            revision: Some(revision.to_string()),
            replaced: true,
        };
        match self
            .result
            .instances
            .iter()
            .position(|i| i.service == service)
        {
            Some(i) => self.result.instances[i] = entry,
            None => self.result.instances.push(entry),
        }
    }
}
