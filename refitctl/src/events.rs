//! What an ansible-playbook run reported: the JSON lines the `refit.containers.progress`
//! callback wrote, one per refit task result, and the closing stats.

use refit_core::results::container_unit::ContainerUnitResult;
use refit_core::results::flow_state::FlowStateResult;
use refit_core::results::run_migrations::RunMigrationsResult;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;

/// The flow phase a task ran in, from the `refit_phase_*` tag on its phase's `import_tasks`
/// in roles/flow/tasks/main.yml; `task` for a task outside the phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Preflight,
    Fetch,
    Migrate,
    Start,
    Verify,
    Recover,
    #[serde(other)]
    Task,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub host: String,
    pub phase: Phase,
    pub action: String,
    pub status: String,
    #[serde(default)]
    pub ignored: bool,
    pub result: Value,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
pub struct Stats {
    pub ok: u64,
    pub changed: u64,
    pub failures: u64,
    pub unreachable: u64,
    #[serde(default)]
    pub rescued: u64,
}

#[derive(Debug, Default)]
pub struct Run {
    pub events: Vec<Event>,
    /// None when the run ended before its play finished (a syntax error, say).
    pub stats: Option<BTreeMap<String, Stats>>,
}

/// How a run ended, and the exit code that says so.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    Unchanged,
    Changed,
    /// Preflight refused, before anything was touched.
    Refused(String),
    Failed(String),
    /// SIGINT or SIGTERM stopped the run; ansible-playbook has exited.
    Interrupted(crate::signals::Interrupt),
}

impl Ending {
    /// A change is a success like no change, so `refitctl update && next` goes on after a real
    /// update; `--detailed-exitcode` (`detailed`) asks for 2 instead, as terraform's does.
    pub fn code(&self, detailed: bool) -> u8 {
        match self {
            Ending::Unchanged => 0,
            Ending::Failed(_) => 1,
            Ending::Changed if detailed => 2,
            Ending::Changed => 0,
            Ending::Refused(_) => 4,
            Ending::Interrupted(i) => i.code(),
        }
    }
}

impl Run {
    pub fn parse(text: &str) -> Self {
        let mut run = Run::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let Some(stats) = v.get("stats") {
                run.stats = serde_json::from_value(stats.clone()).ok();
            } else if let Ok(e) = serde_json::from_value(v) {
                run.events.push(e);
            }
        }
        run
    }

    /// The results of one module on one host, in order, each read as that module's result
    /// type; a result that is not one (a failure before the module ran) is passed over.
    fn results<'a, R: DeserializeOwned>(
        &'a self,
        host: &'a str,
        module: &'a str,
    ) -> impl Iterator<Item = (&'a Event, R)> {
        self.events
            .iter()
            .filter(move |e| e.host == host && e.is(module) && e.status != "skipped")
            .filter_map(|e| Some((e, serde_json::from_value(e.result.clone()).ok()?)))
    }

    pub fn container_units<'a>(
        &'a self,
        host: &'a str,
    ) -> impl Iterator<Item = (&'a Event, ContainerUnitResult)> {
        self.results(host, "container_unit")
    }

    pub fn migrations<'a>(
        &'a self,
        host: &'a str,
    ) -> impl Iterator<Item = (&'a Event, RunMigrationsResult)> {
        self.results(host, "run_migrations")
    }

    pub fn flow_states<'a>(
        &'a self,
        host: &'a str,
    ) -> impl Iterator<Item = (&'a Event, FlowStateResult)> {
        self.results(host, "flow_state")
    }

    pub fn hosts(&self) -> Vec<String> {
        match &self.stats {
            Some(s) => s.keys().cloned().collect(),
            // Without stats, the hosts in the order their first event came; events of several
            // hosts interleave, so a plain dedup would keep repeats.
            None => self.events.iter().fold(Vec::new(), |mut hosts, e| {
                if !hosts.contains(&e.host) {
                    hosts.push(e.host.clone());
                }
                hosts
            }),
        }
    }

    pub fn ending(&self) -> Ending {
        let failed: Vec<&Event> = self
            .events
            .iter()
            .filter(|e| matches!(e.status.as_str(), "failed" | "unreachable") && !e.ignored)
            .collect();
        if let Some(e) = failed.iter().find(|e| e.status == "unreachable") {
            return Ending::Failed(format!("{} is unreachable: {}", e.host, e.msg()));
        }
        if let Some(first) = failed.first() {
            // Over several hosts, one refused while others changed is a failed run, not one
            // that touched nothing.
            let changed = self
                .stats
                .iter()
                .flat_map(|s| s.values())
                .any(|h| h.changed > 0);
            if first.phase == Phase::Preflight && first.is("flow_state") && !changed {
                return Ending::Refused(format!("{}: {}", first.host, first.msg()));
            }
            // The flow's last word on a host sums up what failed, after its recovery.
            let last = failed
                .iter()
                .rev()
                .find(|e| e.host == first.host)
                .unwrap_or(first);
            return Ending::Failed(format!("{}: {}", last.host, last.msg()));
        }
        match &self.stats {
            None => Ending::Failed("the play did not finish; see the output above".into()),
            Some(s) if s.values().any(|h| h.failures > 0 || h.unreachable > 0) => {
                Ending::Failed("a task failed; see the output above".into())
            }
            Some(s) if s.values().any(|h| h.changed > 0) => Ending::Changed,
            Some(_) => Ending::Unchanged,
        }
    }
}

impl Event {
    /// Whether it is a task of the collection's module `module`.
    fn is(&self, module: &str) -> bool {
        self.action
            .strip_prefix("refit.containers.")
            .unwrap_or(&self.action)
            == module
    }

    /// The result's message, which every result, failed or not, carries.
    pub fn msg(&self) -> String {
        self.result
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or("see the output above")
            .trim()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(host: &str, phase: &str, action: &str, status: &str, msg: &str) -> String {
        serde_json::json!({"host": host, "task": "t", "phase": phase, "action": action,
            "status": status, "result": {"msg": msg}})
        .to_string()
    }

    fn stats(changed: u64, failures: u64) -> String {
        serde_json::json!({"stats": {"th1": {"ok": 3, "changed": changed, "failures": failures,
            "unreachable": 0, "rescued": 0}}})
        .to_string()
    }

    #[test]
    fn endings_map_to_the_documented_exit_codes() {
        let ok = Run::parse(
            &[
                line("th1", "fetch", "refit.containers.container_unit", "ok", ""),
                stats(0, 0),
            ]
            .join("\n"),
        );
        assert_eq!((ok.ending().code(false), ok.ending().code(true)), (0, 0));
        let changed = Run::parse(&stats(2, 0));
        assert_eq!(changed.ending(), Ending::Changed);
        assert_eq!(changed.ending().code(false), 0, "a change is a success");
        assert_eq!(changed.ending().code(true), 2, "--detailed-exitcode");
        let refused = Run::parse(
            &[
                line(
                    "th1",
                    "preflight",
                    "refit.containers.flow_state",
                    "failed",
                    "no path from 1.0 to 1.3",
                ),
                line(
                    "th1",
                    "recover",
                    "ansible.builtin.fail",
                    "failed",
                    "refit upgrade failed",
                ),
                stats(0, 1),
            ]
            .join("\n"),
        );
        assert_eq!(
            refused.ending(),
            Ending::Refused("th1: no path from 1.0 to 1.3".into())
        );
        let failed = Run::parse(
            &[
                line(
                    "th1",
                    "start",
                    "refit.containers.container_unit",
                    "failed",
                    "did not converge",
                ),
                line(
                    "th1",
                    "recover",
                    "ansible.builtin.fail",
                    "failed",
                    "refit update failed in task 'start'",
                ),
                stats(1, 1),
            ]
            .join("\n"),
        );
        assert_eq!(
            failed.ending(),
            Ending::Failed("th1: refit update failed in task 'start'".into())
        );
        let gone = Run::parse(&line(
            "th2",
            "task",
            "refit.containers.flow_state",
            "unreachable",
            "no such container",
        ));
        assert_eq!(gone.ending().code(true), 1);
        assert_eq!(
            Run::parse("").ending().code(false),
            1,
            "a run that never finished is a failure"
        );
    }
}
