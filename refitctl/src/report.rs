//! What `status` and `plan` print, computed from a run's events. Pure, so the tables have
//! snapshot tests.

use crate::events::{Phase, Run};
use refit_core::results::container_unit::UnitResult;
use serde::Serialize;

/// One row of `status`: a service, or an instance of a template.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatusRow {
    pub host: String,
    pub service: String,
    pub active: bool,
    /// The revision of the unit file on disk (the table shows its first 12 characters).
    pub revision: Option<String>,
    /// The image ID its container runs.
    pub image: Option<String>,
    pub stream: Option<String>,
    /// What an update would do for it: `newer image`, `new revision`, `restart needed (WHY)`,
    /// `-`.
    pub pending: String,
}

pub fn status_rows(run: &Run) -> Vec<StatusRow> {
    let mut rows = Vec::new();
    for host in run.hosts() {
        let stream = run.flow_states(&host).find_map(|(_, r)| r.recorded_stream);
        for (_, result) in run.container_units(&host) {
            for u in result.units() {
                let revision = u.revision.before.clone();
                let pending = if u.image.newer_available == Some(true) {
                    "newer image".to_string()
                } else if u.revision.before != u.revision.after {
                    "new revision".to_string()
                } else if u.restart_needed {
                    // Why, where it is not the text or the image: a file_changed, say.
                    let reasons: Vec<&str> = u.reasons.iter().map(|r| r.as_str()).collect();
                    format!("restart needed ({})", reasons.join(", "))
                } else {
                    "-".to_string()
                };
                let image = u.image.previous_id.clone();
                let row = |service: &str, active: bool| StatusRow {
                    host: host.clone(),
                    service: service.to_string(),
                    active,
                    revision: revision.clone(),
                    image: image.clone(),
                    stream: stream.clone(),
                    pending: pending.clone(),
                };
                if u.instances.is_empty() {
                    rows.push(row(&u.service, u.active));
                } else {
                    rows.extend(u.instances.iter().map(|i| row(&i.service, i.active)));
                }
            }
        }
    }
    rows
}

pub fn status_table(rows: &[StatusRow]) -> String {
    let mut table = vec![
        [
            "HOST", "SERVICE", "ACTIVE", "REVISION", "IMAGE", "STREAM", "PENDING",
        ]
        .map(String::from),
    ];
    for r in rows {
        table.push([
            r.host.clone(),
            r.service.clone(),
            if r.active { "active" } else { "inactive" }.into(),
            short(r.revision.as_deref()),
            short(r.image.as_deref()),
            r.stream.clone().unwrap_or_else(|| "-".into()),
            r.pending.clone(),
        ]);
    }
    columns(&table)
}

/// What an update or an upgrade would do on one host.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HostPlan {
    pub host: String,
    /// Preflight's verdict.
    pub preflight: String,
    pub fetch: Vec<String>,
    /// Services that would be restarted or started, each with why.
    pub restart: Vec<String>,
    pub migrate: Vec<String>,
    /// Services refit did not write, found running their desired text and image: taken over
    /// as they run, with no restart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adopt: Vec<String>,
    pub unchanged: Vec<String>,
    /// The plan of every unit, as `container_unit` returned it in check mode.
    pub units: Vec<UnitResult>,
}

impl HostPlan {
    pub fn changes(&self) -> bool {
        !(self.fetch.is_empty()
            && self.restart.is_empty()
            && self.migrate.is_empty()
            && self.adopt.is_empty())
    }
}

pub fn plan(run: &Run) -> Vec<HostPlan> {
    let mut plans = Vec::new();
    for host in run.hosts() {
        let mut p = HostPlan {
            host: host.clone(),
            ..HostPlan::default()
        };
        let preflight = run
            .flow_states(&host)
            .find(|(e, _)| e.phase == Phase::Preflight);
        p.preflight = preflight
            .as_ref()
            .map(|(e, _)| e.msg())
            .unwrap_or_else(|| "not run".into());
        // The plan of every unit: what preflight fetched and planned, or the fetch phase's
        // check-mode result.
        let preflight_migrations = preflight.as_ref().and_then(|(_, r)| r.migrations.clone());
        let fetch = preflight.and_then(|(_, r)| r.plan).or_else(|| {
            run.container_units(&host)
                .find(|(e, _)| e.phase == Phase::Fetch)
                .map(|(_, r)| r)
        });
        let mut pulls = Vec::new();
        p.units = fetch.iter().flat_map(|r| r.units()).cloned().collect();
        for u in fetch.iter().flat_map(|r| r.units()) {
            if u.pulls() {
                p.fetch.push(u.image.reference.clone().unwrap_or_default());
                pulls.push(u.unit.trim_end_matches(".container").to_string());
            }
            // A `present` plan writes files; whether the service restarts is what counts.
            if u.restart_needed || u.start_needed || u.pulls() {
                let why = if u.reasons.is_empty() {
                    "new image".to_string()
                } else {
                    let reasons: Vec<&str> = u.reasons.iter().map(|r| r.as_str()).collect();
                    reasons.join(", ")
                };
                p.restart
                    .extend(u.services().into_iter().map(|s| format!("{s} ({why})")));
            } else if u.adopted {
                p.adopt.extend(u.services());
            } else {
                p.unchanged.extend(u.services());
            }
        }
        // The preflight judged each migration on the image its unit is about to run; an
        // older flow's migrate phase did, and one it did not skip is pending. So is one whose
        // unit gets an image still to be pulled, which no stamp can name yet.
        let judged = preflight_migrations.unwrap_or_default();
        for m in judged
            .iter()
            .filter(|m| m.pending || pulls.contains(&m.source))
        {
            if !p.migrate.contains(&m.source) {
                p.migrate.push(m.source.clone());
            }
        }
        for (_, r) in run.migrations(&host) {
            for m in r.migrations() {
                let unit = m.unit.clone().unwrap_or_default();
                let pending = m.ran || m.skipped_reason.is_none() || pulls.contains(&unit);
                if pending && !p.migrate.contains(&unit) {
                    p.migrate.push(unit);
                }
            }
        }
        plans.push(p);
    }
    plans
}

pub fn plan_text(plans: &[HostPlan]) -> String {
    let mut out = String::new();
    for p in plans {
        out.push_str(&format!("{}: {}\n", p.host, p.preflight));
        out.push_str(&format!("  fetch:     {}\n", listing(&p.fetch)));
        out.push_str(&format!("  restart:   {}\n", listing(&p.restart)));
        out.push_str(&format!("  migrate:   {}\n", listing(&p.migrate)));
        if !p.adopt.is_empty() {
            out.push_str(&format!("  adopt:     {}\n", listing(&p.adopt)));
        }
        out.push_str(&format!("  unchanged: {}\n", listing(&p.unchanged)));
    }
    out
}

/// What a run changed on one host.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HostChanges {
    pub host: String,
    pub restarted: Vec<String>,
    pub migrated: Vec<String>,
    /// Services refit did not write, taken over as they ran: not restarted.
    pub adopted: Vec<String>,
    /// Services no result of this run restarted.
    pub untouched: Vec<String>,
}

pub fn changes(run: &Run) -> Vec<HostChanges> {
    let mut out = Vec::new();
    for host in run.hosts() {
        let mut c = HostChanges {
            host: host.clone(),
            ..HostChanges::default()
        };
        let mut all = Vec::new();
        for (_, r) in run.container_units(&host) {
            for s in r.restarted_services() {
                if !c.restarted.contains(&s) {
                    c.restarted.push(s);
                }
            }
            for n in r
                .units()
                .iter()
                .filter(|u| u.adopted)
                .flat_map(|u| u.services())
            {
                if !c.adopted.contains(&n) {
                    c.adopted.push(n);
                }
            }
            for n in r.units().iter().flat_map(|u| u.services()) {
                if !all.contains(&n) {
                    all.push(n);
                }
            }
        }
        for (_, r) in run.migrations(&host) {
            for m in r.migrations().iter().filter(|m| m.ran) {
                c.migrated.push(m.unit.clone().unwrap_or_default());
                // `start_after` starts what the migration stopped again on its new image, so
                // the start phase finds it converged: the restart is the migrate phase's.
                for s in m.started.iter().filter(|s| s.ends_with(".service")) {
                    if !c.restarted.contains(s) {
                        c.restarted.push(s.clone());
                    }
                }
            }
        }
        c.untouched = all
            .into_iter()
            .filter(|s| !c.restarted.contains(s))
            .collect();
        out.push(c);
    }
    out
}

pub fn changes_text(changes: &[HostChanges]) -> String {
    let mut out = String::new();
    for c in changes {
        // A line of its own, only on a run that took services over: the usual line stays as
        // scripts read it.
        if !c.adopted.is_empty() {
            out.push_str(&format!("{}: adopted {}\n", c.host, listing(&c.adopted)));
        }
        out.push_str(&format!(
            "{}: restarted {}; migrated {}; untouched {}\n",
            c.host,
            listing(&c.restarted),
            listing(&c.migrated),
            listing(&c.untouched)
        ));
    }
    out
}

/// A list for a line of text: its items, or `none`.
fn listing(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// The first 12 characters of an ID or revision, as podman prints IDs; `-` for none.
fn short(id: Option<&str>) -> String {
    match id {
        Some(id) if !id.is_empty() => id.chars().take(12).collect(),
        _ => "-".into(),
    }
}

/// Left-aligned columns, two spaces apart (the status and history tables).
pub fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|r| {
            let line: Vec<String> = r
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            line.join("  ").trim_end().to_string() + "\n"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_a_migration_started_again_was_restarted() {
        let line = |phase: &str, action: &str, result: serde_json::Value| {
            serde_json::json!({"host": "th1", "task": "t", "phase": phase, "action": action,
                "status": "changed", "result": result})
            .to_string()
        };
        let run = Run::parse(
            &[
                line(
                    "migrate",
                    "refit.containers.run_migrations",
                    serde_json::json!({"msg": "", "migrations": [{"unit": "content", "ran": true,
                        "stopped": ["content.service", "content.socket"],
                        "started": ["content.socket", "content.service"],
                        "skipped_reason": null, "rc": 0, "stdout_tail": null, "image_id": null,
                        "stamp": "s", "duration_ms": 900}], "ran": 1, "duration_ms": 900}),
                ),
                serde_json::json!({"stats": {"th1": {"ok": 3, "changed": 1, "failures": 0,
                    "unreachable": 0}}})
                .to_string(),
            ]
            .join("\n"),
        );
        let c = changes(&run);
        assert_eq!(c[0].restarted, ["content.service"]);
        assert_eq!(c[0].migrated, ["content"]);
    }

    #[test]
    fn services_taken_over_are_named_apart_from_those_restarted() {
        use refit_core::plan::Reason;
        use refit_core::results::container_unit::{BatchResult, UnitResult};
        let unit = |name: &str, adopted: bool, reasons: Vec<Reason>| UnitResult {
            unit: format!("{name}.container"),
            service: format!("{name}.service"),
            adopted,
            restart_needed: !reasons.is_empty(),
            reasons,
            ..UnitResult::default()
        };
        let batch = BatchResult {
            units: vec![
                unit("db", true, vec![]),
                unit("app", false, vec![Reason::UnitChanged]),
                unit("redis", false, vec![]),
            ],
            ..BatchResult::default()
        };
        let line = |phase: &str| {
            serde_json::json!({"host": "th1", "task": "t", "phase": phase,
                "action": "refit.containers.container_unit", "status": "changed",
                "result": batch})
            .to_string()
        };
        let run = Run::parse(&[line("fetch"), line("start")].join("\n"));
        let p = plan(&run);
        assert_eq!(p[0].adopt, ["db.service"]);
        assert_eq!(p[0].restart, ["app.service (unit_changed)"]);
        assert_eq!(p[0].unchanged, ["redis.service"]);
        assert!(plan_text(&p).contains("  adopt:     db.service\n"));
        let c = changes(&run);
        assert_eq!(c[0].adopted, ["db.service"]);
        assert!(changes_text(&c).starts_with("th1: adopted db.service\n"));
    }
}
