//! The real `Systemd`: systemctl and journalctl as child processes.

use super::show::{PROPERTIES, UnitStatus, parse_show};
use super::{Job, Systemd, SystemdError};
use std::process::Command;

#[derive(Debug, Default, Clone)]
pub struct Systemctl;

fn run(program: &str, args: &[&str]) -> Result<String, SystemdError> {
    let command = format!("{program} {}", args.join(" "));
    tracing::debug!(%command, "running");
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| SystemdError::Spawn(command.clone(), e))?;
    if !out.status.success() {
        return Err(SystemdError::Failed {
            command,
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn with_units<'a>(mut args: Vec<&'a str>, units: &'a [String]) -> Vec<&'a str> {
    args.push("--");
    args.extend(units.iter().map(String::as_str));
    args
}

impl Systemd for Systemctl {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        if units.is_empty() {
            return Ok(Vec::new());
        }
        let props = format!("--property={}", PROPERTIES.join(","));
        let out = run("systemctl", &with_units(vec!["show", &props], units))?;
        Ok(parse_show(&out, units))
    }

    fn daemon_reload(&self) -> Result<(), SystemdError> {
        run("systemctl", &["daemon-reload"]).map(drop)
    }

    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        if units.is_empty() {
            return Ok(());
        }
        run(
            "systemctl",
            &with_units(vec![job.verb(), "--no-block"], units),
        )
        .map(drop)
    }

    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        if units.is_empty() {
            return Ok(());
        }
        run("systemctl", &with_units(vec![job.verb()], units)).map(drop)
    }

    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        // Units that never failed make reset-failed complain; that is not an error here.
        let _ = run("systemctl", &with_units(vec!["reset-failed"], units));
        Ok(())
    }

    fn journal_tail(&self, unit: &str, lines: usize) -> String {
        // Read more than asked: podman's event lines and conmon's cgroup warnings are dropped,
        // so what is left is systemd's story and the container's own output.
        let n = (lines * 8).to_string();
        match run(
            "journalctl",
            &["--no-pager", "-o", "short-iso", "-n", &n, "-u", unit],
        ) {
            Ok(text) => tail_of_interest(&text, lines),
            Err(e) => format!("(no journal: {e})"),
        }
    }
}

/// The last `lines` journal lines that are not podman container events or conmon noise.
fn tail_of_interest(text: &str, lines: usize) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !(l.contains(" podman[") || l.contains(" conmon[")))
        .collect();
    let start = kept.len().saturating_sub(lines);
    kept[start..].join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn podman_events_are_left_out_of_the_tail() {
        let text = "a systemd[1]: Starting x\nb podman[7]: container create\nc x[9]: crashing now\nd conmon[3]: <nwarn>\n";
        assert_eq!(
            super::tail_of_interest(text, 5),
            "a systemd[1]: Starting x\nc x[9]: crashing now"
        );
    }
}
