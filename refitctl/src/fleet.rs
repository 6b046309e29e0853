//! The fleet line of a run over several hosts: which hosts it updated, which were already
//! converged, which failed, and which it never reached (a canary or a wave that stopped the
//! run before their turn). Pure, from the play recap and the hosts the play had.

use crate::events::Run;
use std::process::{Command, Stdio};

#[derive(Debug, Default, PartialEq)]
pub struct Fleet {
    /// In the recap with a change and no failure.
    pub updated: Vec<String>,
    /// In the recap, neither changed nor failed: converged already, a no-op.
    pub unchanged: Vec<String>,
    pub failed: Vec<String>,
    /// Hosts of the play absent from the recap: no task ever ran on them.
    pub untouched: Vec<String>,
}

/// `play_hosts`: every host the play matched, when known (empty: not known).
pub fn fleet(run: &Run, play_hosts: &[String]) -> Option<Fleet> {
    let stats = run.stats.as_ref()?;
    let mut f = Fleet::default();
    for (host, s) in stats {
        let list = if s.failures > 0 || s.unreachable > 0 {
            &mut f.failed
        } else if s.changed > 0 {
            &mut f.updated
        } else {
            &mut f.unchanged
        };
        list.push(host.clone());
    }
    f.untouched = play_hosts
        .iter()
        .filter(|h| !stats.contains_key(*h))
        .cloned()
        .collect();
    Some(f)
}

/// One line; a kind with no host is left out, and `unknown` says the untouched were not asked.
pub fn text(f: &Fleet, untouched_known: bool) -> String {
    let mut parts = Vec::new();
    for (what, hosts) in [
        ("updated", &f.updated),
        ("unchanged", &f.unchanged),
        ("failed", &f.failed),
        ("never touched", &f.untouched),
    ] {
        if !hosts.is_empty() {
            parts.push(format!("{what} {}", hosts.join(", ")));
        }
    }
    if !untouched_known {
        parts.push("never touched unknown".into());
    }
    format!("hosts: {}\n", parts.join("; "))
}

/// The hosts `ansible --list-hosts` finds for `all` in `inventory`, within `limit`; None when
/// it cannot say (no `ansible` beside `ansible_playbook`, or it failed).
pub fn list_hosts(
    ansible_playbook: &str,
    inventory: &str,
    limit: Option<&str>,
) -> Option<Vec<String>> {
    let ansible = ansible_playbook.strip_suffix("-playbook")?;
    let mut cmd = Command::new(ansible);
    cmd.args(["all", "--list-hosts", "-i", inventory])
        .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    if let Some(l) = limit {
        cmd.arg("--limit").arg(l);
    }
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| parse_list_hosts(&String::from_utf8_lossy(&out.stdout)))
}

/// `  hosts (2):\n    a\n    b\n` into [a, b].
fn parse_list_hosts(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hosts ("))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stats: serde_json::Value) -> Run {
        Run::parse(&serde_json::json!({ "stats": stats }).to_string())
    }

    #[test]
    fn a_stopped_fleet_run_names_updated_failed_and_untouched_hosts() {
        let r = run(serde_json::json!({
            "fl1": {"ok": 5, "changed": 2, "failures": 0, "unreachable": 0},
            "fl2": {"ok": 3, "changed": 0, "failures": 0, "unreachable": 0},
            "fl3": {"ok": 1, "changed": 0, "failures": 1, "unreachable": 0},
        }));
        let hosts: Vec<String> = ["fl1", "fl2", "fl3", "fl4", "fl5"].map(String::from).into();
        let f = fleet(&r, &hosts).expect("stats");
        assert_eq!(f.updated, ["fl1"]);
        assert_eq!(f.unchanged, ["fl2"]);
        assert_eq!(f.failed, ["fl3"]);
        assert_eq!(f.untouched, ["fl4", "fl5"]);
        assert_eq!(
            text(&f, true),
            "hosts: updated fl1; unchanged fl2; failed fl3; never touched fl4, fl5\n"
        );
    }

    #[test]
    fn without_the_play_hosts_the_untouched_are_unknown_and_said_so() {
        let r = run(serde_json::json!({
            "fl1": {"ok": 1, "changed": 0, "failures": 0, "unreachable": 1},
        }));
        let f = fleet(&r, &[]).expect("stats");
        assert_eq!(
            text(&f, false),
            "hosts: failed fl1; never touched unknown\n"
        );
    }

    #[test]
    fn one_host_refused_while_others_changed_is_a_failure_not_nothing_touched() {
        let refused = serde_json::json!({"host": "fl3", "task": "t", "phase": "preflight",
            "action": "refit.containers.flow_state", "status": "failed",
            "result": {"msg": "run other holds the lease"}});
        let stats = |changed: u64| {
            serde_json::json!({"stats": {
                "fl1": {"ok": 5, "changed": changed, "failures": 0, "unreachable": 0},
                "fl3": {"ok": 0, "changed": 0, "failures": 1, "unreachable": 0}}})
        };
        let ending = |changed| Run::parse(&format!("{refused}\n{}", stats(changed))).ending();
        assert!(matches!(ending(2), crate::events::Ending::Failed(m) if m.contains("fl3")));
        assert!(matches!(ending(0), crate::events::Ending::Refused(_)));
    }

    #[test]
    fn a_run_that_never_reached_its_recap_has_no_fleet_line() {
        assert_eq!(fleet(&Run::default(), &[]), None);
    }

    #[test]
    fn list_hosts_output_is_read_host_by_host() {
        assert_eq!(
            parse_list_hosts("  hosts (2):\n    fl1\n    fl10\n"),
            ["fl1", "fl10"]
        );
        assert!(parse_list_hosts("  hosts (0):\n").is_empty());
    }
}
