//! The real `Systemd`: systemctl and journalctl as child processes.

use super::show::{PROPERTIES, UnitStatus, parse_show};
use super::{Job, Systemd, SystemdError};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// systemctl and journalctl aimed at one scope's manager (root's, or a user's: scope.rs).
#[derive(Debug, Default, Clone)]
pub struct Systemctl {
    pub scope: crate::scope::Scope,
}

/// How long a call may take. A job that waits (`run_job`) is bounded by systemd's own stop and
/// start timeouts (90 s by default) and gets more; a hung systemd or D-Bus never holds a run
/// for longer than these.
const QUICK: Duration = Duration::from_secs(60);
const JOB: Duration = Duration::from_secs(300);

impl Systemctl {
    pub fn for_scope(scope: &crate::scope::Scope) -> Self {
        Systemctl {
            scope: scope.clone(),
        }
    }

    /// Enables `unit` and starts it now (a user's podman.socket: scope.rs).
    pub fn enable_now(&self, unit: &str) -> Result<(), SystemdError> {
        self.run("systemctl", &["enable", "--now", "--", unit])
            .map(drop)
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<String, SystemdError> {
        run_bounded(self.scope.command(program), args, QUICK)
    }

    fn run_bounded(
        &self,
        program: &str,
        args: &[&str],
        bound: Duration,
    ) -> Result<String, SystemdError> {
        run_bounded(self.scope.command(program), args, bound)
    }
}

fn run_bounded(mut cmd: Command, args: &[&str], bound: Duration) -> Result<String, SystemdError> {
    cmd.args(args);
    let command = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    tracing::debug!(%command, "running");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| SystemdError::Spawn(command.clone(), e))?;
    // Drained beside the wait, so a full pipe never stalls the child.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + bound;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SystemdError::Hung {
                    command,
                    secs: bound.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(SystemdError::Spawn(command, e)),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        return Err(SystemdError::Failed {
            command,
            code: status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
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
        let out = self.run("systemctl", &with_units(vec!["show", &props], units))?;
        Ok(parse_show(&out, units))
    }

    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.run("systemctl", &["daemon-reload"]).map(drop)
    }

    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        if units.is_empty() {
            return Ok(());
        }
        self.run(
            "systemctl",
            &with_units(vec![job.verb(), "--no-block"], units),
        )
        .map(drop)
    }

    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        if units.is_empty() {
            return Ok(());
        }
        self.run_bounded("systemctl", &with_units(vec![job.verb()], units), JOB)
            .map(drop)
    }

    fn run_job_within(
        &self,
        job: Job,
        units: &[String],
        bound: Duration,
    ) -> Result<bool, SystemdError> {
        if units.is_empty() {
            return Ok(true);
        }
        // A systemctl killed at the bound may not have queued the job yet: queued again without
        // waiting (systemd merges it with one already there), the job goes on either way.
        let ended = !bound.is_zero()
            && match self.run_bounded("systemctl", &with_units(vec![job.verb()], units), bound) {
                Ok(_) => true,
                Err(SystemdError::Hung { .. }) => false,
                Err(e) => return Err(e),
            };
        if !ended {
            self.enqueue(job, units)?;
        }
        Ok(ended)
    }

    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        // Without units, systemctl would reset every unit on the host.
        if units.is_empty() {
            return Ok(());
        }
        // Units that never failed make reset-failed complain; that is not an error here.
        let _ = self.run("systemctl", &with_units(vec!["reset-failed"], units));
        Ok(())
    }

    fn journal_tail(&self, unit: &str, lines: usize) -> String {
        // Read more than asked: podman's event lines and conmon's cgroup warnings are dropped,
        // so what is left is systemd's story and the container's own output.
        let n = (lines * 8).to_string();
        match self.run(
            "journalctl",
            &[
                "--no-pager",
                "-o",
                "short-iso",
                "-n",
                &n,
                self.scope.journal_unit_arg(),
                unit,
            ],
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
    fn a_call_past_its_bound_is_killed_and_named() {
        let e = super::run_bounded(
            std::process::Command::new("sleep"),
            &["5"],
            std::time::Duration::from_millis(200),
        )
        .expect_err("bounded");
        assert!(
            e.to_string()
                .contains("`sleep 5` did not finish within 0 s"),
            "{e}"
        );
        let out = super::run_bounded(
            std::process::Command::new("echo"),
            &["hi"],
            std::time::Duration::from_secs(5),
        );
        assert_eq!(out.expect("echo").trim(), "hi");
    }

    #[test]
    fn podman_events_are_left_out_of_the_tail() {
        let text = "a systemd[1]: Starting x\nb podman[7]: container create\nc x[9]: crashing now\nd conmon[3]: <nwarn>\n";
        assert_eq!(
            super::tail_of_interest(text, 5),
            "a systemd[1]: Starting x\nc x[9]: crashing now"
        );
    }
}
