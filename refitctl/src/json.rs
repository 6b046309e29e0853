//! `--json` for `status` and `plan`: what the table or the plan text shows, with full IDs, and
//! each unit's result as the module returned it (the typed results of refit_core::results).

use crate::diffs::FileDiff;
use crate::events::Run;
use crate::report::{self, HostPlan, StatusRow};
use refit_core::results::container_unit::UnitResult;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct HostStatus {
    pub host: String,
    /// The stream recorded on the host.
    pub stream: Option<String>,
    /// The table's rows: a service, or an instance of a template.
    pub services: Vec<StatusRow>,
    pub units: Vec<UnitResult>,
}

pub fn status(run: &Run) -> Vec<HostStatus> {
    let rows = report::status_rows(run);
    run.hosts()
        .into_iter()
        .map(|host| HostStatus {
            stream: run.flow_states(&host).find_map(|(_, r)| r.recorded_stream),
            services: rows.iter().filter(|r| r.host == host).cloned().collect(),
            units: run
                .container_units(&host)
                .flat_map(|(_, r)| r.units().to_vec())
                .collect(),
            host: host.clone(),
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct Plan<'a> {
    /// Whether anything would change: what `--detailed-exitcode` exits 2 for.
    pub changes: bool,
    pub hosts: &'a [HostPlan],
    /// With `--diff`: each unit file that would change, as a unified diff.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<Diff>,
}

#[derive(Debug, Serialize)]
pub struct Diff {
    pub host: String,
    pub file: String,
    pub unified: String,
}

pub fn plan<'a>(plans: &'a [HostPlan], diffs: &[(String, FileDiff)]) -> Plan<'a> {
    Plan {
        changes: plans.iter().any(HostPlan::changes),
        hosts: plans,
        diffs: diffs
            .iter()
            .map(|(host, d)| Diff {
                host: host.clone(),
                file: d.file().to_string(),
                unified: d.unified(),
            })
            .collect(),
    }
}

/// Pretty JSON and a newline; these types always serialize.
pub fn text(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")) + "\n"
}
