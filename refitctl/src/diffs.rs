//! `--diff`: the unit files' differences a run reported, as unified diffs. A module's `diff`
//! key holds the whole before and after texts (Ansible's diff callback form), one object or a
//! list; the modules have masked the secrets in them already.

use crate::events::Run;
use serde::Deserialize;
use serde_json::Value;

/// One file's before and after, as a module reported them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileDiff {
    #[serde(default)]
    pub before: String,
    #[serde(default)]
    pub after: String,
    #[serde(default)]
    pub before_header: String,
    #[serde(default)]
    pub after_header: String,
}

impl FileDiff {
    /// The file's path: the header without the module's `(desired)`.
    pub fn file(&self) -> &str {
        self.after_header.trim_end_matches(" (desired)")
    }

    /// The unified diff, with three lines of context.
    pub fn unified(&self) -> String {
        similar::TextDiff::from_lines(&self.before, &self.after)
            .unified_diff()
            .context_radius(3)
            .header(&self.before_header, &self.after_header)
            .missing_newline_hint(false)
            .to_string()
    }
}

/// Each host's diffs, in the order the run reported them. A unit written in the fetch phase
/// and seen again later (a check run's start phase) is shown once.
pub fn of_run(run: &Run) -> Vec<(String, FileDiff)> {
    let mut out: Vec<(String, FileDiff)> = Vec::new();
    for e in &run.events {
        for d in of_result(&e.result) {
            let seen = out.iter().any(|(h, o)| *h == e.host && *o == d);
            if !seen && d.before != d.after {
                out.push((e.host.clone(), d));
            }
        }
    }
    out
}

fn of_result(result: &Value) -> Vec<FileDiff> {
    match result.get("diff") {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|d| serde_json::from_value(d.clone()).ok())
            .collect(),
        Some(d @ Value::Object(_)) => serde_json::from_value(d.clone()).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The diffs for the summary: a line naming the host and the file, then its unified diff.
pub fn text(diffs: &[(String, FileDiff)]) -> String {
    let mut out = String::new();
    for (host, d) in diffs {
        out.push_str(&format!("{host}: diff of {}\n", d.file()));
        out.push_str(&d.unified());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(host: &str, diff: Value) -> String {
        serde_json::json!({"host": host, "task": "t", "phase": "fetch",
            "action": "refit.containers.container_unit", "status": "changed",
            "result": {"msg": "", "diff": diff}})
        .to_string()
    }

    #[test]
    fn each_changed_file_once_as_a_unified_diff() {
        let one = serde_json::json!({
            "before": "[Container]\nImage=app:1.0\nEnvironment=PW=********\n",
            "after": "[Container]\nImage=app:1.1\nEnvironment=PW=********\n",
            "before_header": "/etc/containers/systemd/app.container (on disk)",
            "after_header": "/etc/containers/systemd/app.container (desired)"});
        let same = serde_json::json!({"before": "x\n", "after": "x\n",
            "before_header": "a", "after_header": "a"});
        let run = Run::parse(
            &[
                event("th1", serde_json::json!([one.clone(), same])),
                event("th1", one.clone()),
                event("th2", one),
            ]
            .join("\n"),
        );
        let diffs = of_run(&run);
        let hosts: Vec<&str> = diffs.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(hosts, ["th1", "th2"]);
        let text = text(&diffs[..1]);
        insta::assert_snapshot!(text, @r"
        th1: diff of /etc/containers/systemd/app.container
        --- /etc/containers/systemd/app.container (on disk)
        +++ /etc/containers/systemd/app.container (desired)
        @@ -1,3 +1,3 @@
         [Container]
        -Image=app:1.0
        +Image=app:1.1
         Environment=PW=********
        ");
    }
}
