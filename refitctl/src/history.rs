//! `history`: each service's kept revisions on each host, from the `history` container_unit
//! returns, as a table (the id `rollback --to` takes, when it converged, image, stream, and
//! whether the image is still local) or as JSON.

use crate::events::{Ending, Run};
use crate::report::columns;
use refit_core::results::container_unit::HistoryEntry;
use serde::Serialize;

/// One kept revision of one service on one host.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistoryRow {
    pub host: String,
    pub service: String,
    #[serde(flatten)]
    pub entry: HistoryEntry,
}

/// Every kept revision the run reported, per host and service, oldest first.
pub fn rows(run: &Run) -> Vec<HistoryRow> {
    let mut out = Vec::new();
    for host in run.hosts() {
        for (_, result) in run.container_units(&host) {
            for u in result.units() {
                let service = u.service.trim_end_matches(".service");
                for e in u.history.iter().flatten() {
                    out.push(HistoryRow {
                        host: host.clone(),
                        service: service.to_string(),
                        entry: e.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The table: `*` marks the revision that last converged.
pub fn table(rows: &[HistoryRow]) -> String {
    if rows.is_empty() {
        return "no kept revisions: refit has recorded none that converged\n".into();
    }
    let head = [
        "HOST", "SERVICE", "REVISION", "RECORDED", "IMAGE", "STREAM", "LOCAL", "",
    ];
    let mut table: Vec<[String; 8]> = vec![head.map(String::from)];
    for r in rows {
        let e = &r.entry;
        table.push([
            r.host.clone(),
            r.service.clone(),
            e.id.clone(),
            e.recorded_at.clone(),
            e.image_id
                .as_deref()
                .map_or_else(|| "-".into(), |i| i.chars().take(12).collect()),
            e.stream.clone().unwrap_or_else(|| "-".into()),
            if e.local { "yes" } else { "gone" }.into(),
            if e.current { "*" } else { "" }.into(),
        ]);
    }
    columns(&table)
}

/// Prints the table or the JSON through `out`, and says how the run ended: reading changes
/// nothing, whatever the module's check mode reported.
pub fn print(run: &Run, as_json: bool, out: impl Fn(&str)) -> Ending {
    let ending = run.ending();
    if matches!(ending, Ending::Failed(_) | Ending::Refused(_)) {
        return ending;
    }
    let rows = rows(run);
    if as_json {
        out(&crate::json::text(&rows));
    } else {
        out(&table(&rows));
    }
    Ending::Unchanged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(host: &str, history: serde_json::Value) -> String {
        serde_json::json!({
            "host": host, "phase": "task", "action": "refit.containers.container_unit",
            "status": "ok", "result": {"changed": false, "units": [{
                "unit": "content.container", "service": "content.service", "path": "/x",
                "state": "present", "active": true, "revision": {}, "image": {"pulled": false},
                "restart_needed": false, "start_needed": false, "restarted": false,
                "rolled_back": false, "reasons": [], "actions": [],
                "container_id": null, "invocation_id": null, "history": history,
            }], "restarted_services": [], "restart_needed": false, "start_needed": false,
            "rolled_back": false, "duration_ms": {}}
        })
        .to_string()
    }

    fn entry(id: &str, image: &str, local: bool, current: bool) -> serde_json::Value {
        serde_json::json!({
            "id": id, "revision": "r", "image_ref": "svc:1.0",
            "image_id": format!("{image}0123456789abcdef"), "local": local,
            "stream": "1.0", "recorded_at": "2026-12-02T04:00:00Z", "current": current,
        })
    }

    #[test]
    fn the_table_has_a_row_per_kept_revision_and_marks_the_current_one() {
        let text = [
            event(
                "th1",
                serde_json::json!([
                    entry("aaaa11112222", "1111", false, false),
                    entry("bbbb11112222", "2222", true, true)
                ]),
            ),
            r#"{"stats": {"th1": {"ok": 1, "changed": 0, "failures": 0, "unreachable": 0}}}"#
                .to_string(),
        ]
        .join("\n");
        let rows = rows(&Run::parse(&text));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].service, "content");
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("HOST  SERVICE  REVISION"), "{t}");
        assert!(
            lines[1].contains("aaaa11112222") && lines[1].contains("gone"),
            "{t}"
        );
        assert!(!lines[1].ends_with('*'), "{t}");
        assert!(
            lines[2].contains("  222201234567  "),
            "12 characters of the ID: {t}"
        );
        assert!(lines[2].contains(" yes ") && lines[2].ends_with('*'), "{t}");
        let json = serde_json::to_value(&rows).expect("serializes");
        assert_eq!(json[1]["id"], "bbbb11112222");
        assert_eq!(json[1]["host"], "th1");
    }

    #[test]
    fn no_history_says_so() {
        assert!(table(&[]).starts_with("no kept revisions"));
    }
}
