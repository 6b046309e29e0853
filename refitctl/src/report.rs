//! What `status` and `plan` print, computed from a run's events. Pure, so the tables have
//! snapshot tests.

use crate::events::Run;
use serde::Serialize;
use serde_json::Value;

/// One row of `status`: a service, or an instance of a template.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatusRow {
    pub host: String,
    pub service: String,
    pub active: bool,
    /// The revision of the unit file on disk.
    pub revision: String,
    /// The image ID its container runs.
    pub image: String,
    pub stream: String,
    /// What an update would do for it: `newer image`, `new revision`, `restart needed`, `-`.
    pub pending: String,
}

pub fn status_rows(run: &Run) -> Vec<StatusRow> {
    let mut rows = Vec::new();
    for host in run.hosts() {
        let stream = run
            .results(&host, "flow_state")
            .find_map(|e| str_at(&e.result, "/recorded_stream"))
            .unwrap_or_else(|| "-".into());
        for e in run.results(&host, "container_unit") {
            for u in units(&e.result) {
                let revision = short(str_at(u, "/revision/before").as_deref());
                let desired = str_at(u, "/revision/after");
                let mut pending = Vec::new();
                if u.pointer("/image/newer_available") == Some(&Value::Bool(true)) {
                    pending.push("newer image");
                } else if str_at(u, "/revision/before") != desired {
                    pending.push("new revision");
                } else if u["restart_needed"] == Value::Bool(true) {
                    pending.push("restart needed");
                }
                let pending = if pending.is_empty() {
                    "-".to_string()
                } else {
                    pending.join(", ")
                };
                let instances = u["instances"].as_array().cloned().unwrap_or_default();
                let image = short(str_at(u, "/image/previous_id").as_deref());
                let row = |service: String, active: bool| StatusRow {
                    host: host.clone(),
                    service,
                    active,
                    revision: revision.clone(),
                    image: image.clone(),
                    stream: stream.clone(),
                    pending: pending.clone(),
                };
                if instances.is_empty() {
                    rows.push(row(
                        str_at(u, "/service").unwrap_or_default(),
                        u["active"] == Value::Bool(true),
                    ));
                } else {
                    for i in instances {
                        rows.push(row(
                            str_at(&i, "/service").unwrap_or_default(),
                            i["active"] == Value::Bool(true),
                        ));
                    }
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
            r.revision.clone(),
            r.image.clone(),
            r.stream.clone(),
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
    pub unchanged: Vec<String>,
}

impl HostPlan {
    pub fn changes(&self) -> bool {
        !(self.fetch.is_empty() && self.restart.is_empty() && self.migrate.is_empty())
    }
}

pub fn plan(run: &Run) -> Vec<HostPlan> {
    let mut plans = Vec::new();
    for host in run.hosts() {
        let mut p = HostPlan {
            host: host.clone(),
            ..HostPlan::default()
        };
        p.preflight = run
            .results(&host, "flow_state")
            .find(|e| e.phase == "preflight")
            .and_then(|e| str_at(&e.result, "/msg"))
            .unwrap_or_else(|| "not run".into());
        // The fetch phase's check-mode result is the plan of every unit.
        let fetch = run
            .results(&host, "container_unit")
            .find(|e| e.phase == "fetch");
        let mut pulls = Vec::new();
        for u in fetch.iter().flat_map(|e| units(&e.result)) {
            let actions: Vec<&str> = u["actions"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let reasons: Vec<&str> = u["reasons"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if actions.contains(&"pull") {
                p.fetch.push(str_at(u, "/image/ref").unwrap_or_default());
                let unit = str_at(u, "/unit").unwrap_or_default();
                pulls.push(unit.trim_end_matches(".container").to_string());
            }
            // A `present` plan writes files; whether the service restarts is what counts.
            let restarts = u["restart_needed"] == Value::Bool(true)
                || u["start_needed"] == Value::Bool(true)
                || actions.contains(&"pull");
            let subjects = services_of(u);
            if restarts {
                let why = if reasons.is_empty() {
                    "new image".to_string()
                } else {
                    reasons.join(", ")
                };
                p.restart
                    .extend(subjects.into_iter().map(|s| format!("{s} ({why})")));
            } else {
                p.unchanged.extend(subjects);
            }
        }
        // The migrate phase judged each migration on the local image its unit is about to
        // run; one it did not skip is pending. So is one whose unit gets an image still to be
        // pulled, which no stamp can name yet.
        for e in run.results(&host, "run_migrations") {
            for m in e.result["migrations"].as_array().into_iter().flatten() {
                let unit = str_at(m, "/unit").unwrap_or_default();
                let pending = m["ran"] == Value::Bool(true)
                    || m["skipped_reason"].is_null()
                    || pulls.contains(&unit);
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
        for e in run.results(&host, "container_unit") {
            for s in e.result["restarted_services"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(s) = s.as_str().filter(|s| !c.restarted.iter().any(|r| r == s)) {
                    c.restarted.push(s.to_string());
                }
            }
            for u in units(&e.result) {
                for n in services_of(u) {
                    if !all.contains(&n) {
                        all.push(n);
                    }
                }
            }
        }
        for e in run.results(&host, "run_migrations") {
            for m in e.result["migrations"].as_array().into_iter().flatten() {
                if m["ran"] == Value::Bool(true) {
                    c.migrated.push(str_at(m, "/unit").unwrap_or_default());
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

/// A container_unit result's units: the list of a `units` run, or the result itself.
fn units(result: &Value) -> Vec<&Value> {
    match result["units"].as_array() {
        Some(list) => list.iter().collect(),
        None if result.get("service").is_some() => vec![result],
        None => Vec::new(),
    }
}

/// The services a unit's report covers: its template instances, or the service itself.
fn services_of(u: &Value) -> Vec<String> {
    match u["instances"].as_array().filter(|l| !l.is_empty()) {
        Some(list) => list.iter().filter_map(|i| str_at(i, "/service")).collect(),
        None => vec![str_at(u, "/service").unwrap_or_default()],
    }
}

fn str_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The first 12 characters of an ID or revision, as podman prints IDs; `-` for none.
fn short(id: Option<&str>) -> String {
    match id {
        Some(id) if !id.is_empty() => id.chars().take(12).collect(),
        _ => "-".into(),
    }
}

/// Left-aligned columns, two spaces apart.
fn columns<const N: usize>(rows: &[[String; N]]) -> String {
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
