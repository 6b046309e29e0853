//! What `container_unit` reports: one `Report` per target, and the module's outcome. A single
//! unit's report is the result itself; a `units` run returns them as a list.

use super::apply::Fetched;
use super::observe::Observation;
use super::target::{Target, TargetPlan};
use crate::ansible::{Diff, Outcome};
use crate::plan::{Action, Reason, Wanted};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub unit: String,
    pub service: String,
    pub path: String,
    pub state: String,
    /// systemd reports the service active or activating (for a template: any instance).
    pub active: bool,
    pub revision: RevisionPair,
    pub image: ImageReport,
    pub restart_needed: bool,
    /// A service is not running, and `started` would start it.
    pub start_needed: bool,
    pub restarted: bool,
    pub rolled_back: bool,
    pub reasons: Vec<Reason>,
    pub actions: Vec<String>,
    pub container_id: Option<String>,
    pub invocation_id: Option<String>,
    /// A template's instances: which revision each runs, and whether this run replaced it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceReport>,
    /// Instances a canary run left on their revision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    pub duration_ms: BTreeMap<&'static str, u64>,
    #[serde(skip)]
    pub changed: bool,
    #[serde(skip)]
    pub diff: Option<Diff>,
    #[serde(skip)]
    summary: String,
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
    /// Check mode, `pull: always`: the registry holds a newer image under the reference. None
    /// when it was not asked, or could not tell (`registry_error` says why).
    pub newer_available: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct InstanceReport {
    pub service: String,
    pub active: bool,
    pub container_id: Option<String>,
    pub invocation_id: Option<String>,
    /// The revision its container runs.
    pub revision: Option<String>,
    pub replaced: bool,
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
            file.push(action_name(*a));
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
        actions.extend(plan.starts.iter().map(|(s, j)| job(j.verb(), s)));
        let first = obs.services.first();
        let instances = if template {
            obs.services
                .iter()
                .map(|s| InstanceReport {
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
        Report {
            unit: t.name.file_name(),
            service: t.name.service(),
            path: t.path.display().to_string(),
            state: t.wanted.as_str().to_string(),
            active: obs.services.iter().any(|s| s.active),
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
                newer_available: obs.newer_image,
                registry_error,
            },
            restart_needed: plan.restart_needed,
            start_needed: plan.start_needed,
            reasons: plan.reasons.clone(),
            changed: !actions.is_empty(),
            summary: summary(t, plan, &actions),
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
            diff: diff(t, obs),
            ..Report::default()
        }
    }
}

pub fn action_name(a: Action) -> String {
    serde_json::to_value(a)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn reason_name(r: Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
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
    let reasons: Vec<String> = plan.reasons.iter().map(|r| reason_name(*r)).collect();
    format!(
        "{}: {{verb}} {} ({})",
        t.name.service(),
        actions.join(", "),
        reasons.join(", ")
    )
}

#[derive(Serialize)]
struct BatchData<'a> {
    units: &'a [Report],
    restarted_services: Vec<String>,
    restart_needed: bool,
    start_needed: bool,
    rolled_back: bool,
    duration_ms: BTreeMap<&'static str, u64>,
}

/// The module's outcome from its reports: flat for one unit, a list for a `units` run.
pub fn outcome(
    mut reports: Vec<Report>,
    batch: bool,
    check: bool,
    failure: Option<String>,
    total_ms: u64,
) -> Outcome {
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
        .filter_map(|r| r.image.registry_error.clone())
        .collect();
    let mut out = if batch {
        let restarted_services = reports
            .iter()
            .filter(|r| r.restarted)
            .flat_map(|r| {
                if r.instances.is_empty() {
                    vec![r.service.clone()]
                } else {
                    r.instances
                        .iter()
                        .filter(|i| i.replaced)
                        .map(|i| i.service.clone())
                        .collect()
                }
            })
            .collect();
        let data = BatchData {
            units: &reports,
            restarted_services,
            restart_needed: reports.iter().any(|r| r.restart_needed),
            start_needed: reports.iter().any(|r| r.start_needed),
            rolled_back: reports.iter().any(|r| r.rolled_back),
            duration_ms: BTreeMap::from([("total", total_ms)]),
        };
        let msg = if msg.is_empty() {
            format!("all {} units are converged", reports.len())
        } else {
            msg
        };
        Outcome::new(changed, msg).with_data(&data)
    } else {
        let mut r = reports.remove(0);
        r.duration_ms.insert("total", total_ms);
        Outcome::new(changed, msg).with_data(&r)
    };
    out.diff = diffs;
    out.warnings = warnings;
    match failure {
        Some(f) => out.failed(f),
        None => out,
    }
}
