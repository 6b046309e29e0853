//! Parsing `systemctl show`: one block per unit, separated by one empty line, keys in systemd's
//! order (not the order asked).

use std::collections::HashMap;

/// The properties refit reads, for every unit in one `systemctl show` call.
pub const PROPERTIES: &[&str] = &[
    "Id",
    "Type",
    "Job",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "NRestarts",
    "InvocationID",
    "MainPID",
    "NeedDaemonReload",
    "FragmentPath",
    "SourcePath",
    "Requires",
    "BindsTo",
    "ConsistsOf",
    "RequiredBy",
    "BoundBy",
    "WantedBy",
    "UpheldBy",
    "TriggeredBy",
    "After",
    "Before",
    // With `--timestamp=unix`: `@SECONDS`.
    "ActiveEnterTimestamp",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitStatus {
    pub name: String,
    pub props: HashMap<String, String>,
}

impl UnitStatus {
    pub fn get(&self, key: &str) -> &str {
        self.props.get(key).map_or("", String::as_str)
    }
    pub fn exists(&self) -> bool {
        !matches!(self.get("LoadState"), "not-found" | "")
    }
    pub fn active_state(&self) -> &str {
        self.get("ActiveState")
    }
    /// Running or on its way there: what "was running" means for restore.
    pub fn is_active(&self) -> bool {
        matches!(
            self.active_state(),
            "active" | "activating" | "reloading" | "refreshing"
        )
    }
    pub fn is_inactive(&self) -> bool {
        matches!(self.active_state(), "inactive" | "failed" | "")
    }
    pub fn n_restarts(&self) -> u64 {
        self.get("NRestarts").parse().unwrap_or(0)
    }
    pub fn invocation_id(&self) -> &str {
        self.get("InvocationID")
    }
    pub fn need_daemon_reload(&self) -> bool {
        self.get("NeedDaemonReload") == "yes"
    }
    /// A start job ended and left the unit down: no job is queued, and the unit is inactive or
    /// failed. For a service this is a start that never happened (a dependency failed, a
    /// condition was not met); waiting longer cannot change it. A oneshot that ran and exited
    /// looks the same, so it never counts.
    pub fn start_ended_down(&self) -> bool {
        self.get("Job").is_empty()
            && self.get("Type") != "oneshot"
            && matches!(self.active_state(), "inactive" | "failed")
    }
    /// When it last became active, in seconds since the epoch (asked with `--timestamp=unix`).
    pub fn active_since(&self) -> Option<i64> {
        self.get("ActiveEnterTimestamp")
            .strip_prefix('@')
            .and_then(|s| s.parse().ok())
            .filter(|&t| t > 0)
    }
    /// A oneshot service whose run ended well and that stays active after it
    /// (`RemainAfterExit=yes`): it has no container, but it ran.
    pub fn ran_once(&self) -> bool {
        self.get("Type") == "oneshot" && self.active_state() == "active"
    }
    /// The units it requires or is bound to.
    pub fn requirements(&self) -> Vec<String> {
        let mut all = self.list("Requires");
        all.extend(self.list("BindsTo"));
        all
    }
    /// A space-separated list property (`Requires`, `After`...).
    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }
}

/// Splits `systemctl show` output into one status per asked unit.
pub fn parse_show(out: &str, asked: &[String]) -> Vec<UnitStatus> {
    let mut blocks: Vec<HashMap<String, String>> = vec![HashMap::new()];
    for line in out.lines() {
        if line.is_empty() {
            blocks.push(HashMap::new());
            continue;
        }
        if let Some((k, v)) = line.split_once('=')
            && let Some(b) = blocks.last_mut()
        {
            b.insert(k.to_string(), v.to_string());
        }
    }
    blocks.retain(|b| !b.is_empty());
    asked
        .iter()
        .enumerate()
        .map(|(i, name)| UnitStatus {
            name: name.clone(),
            props: blocks.get(i).cloned().unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_ended_down_is_told_from_one_under_way() {
        let st = |props: &[(&str, &str)]| UnitStatus {
            name: "a.service".into(),
            props: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        assert!(st(&[("ActiveState", "inactive"), ("Job", "")]).start_ended_down());
        assert!(st(&[("ActiveState", "failed")]).start_ended_down());
        assert!(!st(&[("ActiveState", "inactive"), ("Job", "42")]).start_ended_down());
        assert!(!st(&[("ActiveState", "activating")]).start_ended_down());
        assert!(!st(&[("ActiveState", "inactive"), ("Type", "oneshot")]).start_ended_down());
    }

    #[test]
    fn blocks_map_to_the_units_asked() {
        let out = "Id=a.service\nActiveState=active\nNRestarts=2\n\nId=b.service\nLoadState=not-found\nActiveState=inactive";
        let s = parse_show(out, &["a.service".into(), "b.service".into()]);
        assert_eq!((s[0].is_active(), s[0].n_restarts()), (true, 2));
        assert!(!s[1].exists());
        assert!(s[1].is_inactive());
    }

    #[test]
    fn a_oneshot_that_ran_tells_when_it_became_active() {
        let out = "Id=m.service\nType=oneshot\nActiveState=active\nActiveEnterTimestamp=@1733496121\n\n\
                   Id=n.service\nType=oneshot\nActiveState=inactive\nActiveEnterTimestamp=";
        let s = parse_show(out, &["m.service".into(), "n.service".into()]);
        assert_eq!(
            (s[0].ran_once(), s[0].active_since()),
            (true, Some(1733496121))
        );
        assert_eq!((s[1].ran_once(), s[1].active_since()), (false, None));
    }
}
