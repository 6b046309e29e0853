//! The phases of a step's script (`postgresql.sh`), each in a one-off container with no
//! network: its output, or why it failed, with the tail of what it printed.

use super::DataStepError;
use crate::host::Host;
use crate::podman::{Finished, OneOff, PodmanError};
use std::collections::HashMap;
use std::time::Duration;

/// The work inside the one-off containers.
const SCRIPT: &str = include_str!("postgresql.sh");
/// How many lines of a failed container's output its error quotes.
const TAIL_LINES: usize = 30;

/// Where the phases of one unit's step run: the host, and the unit they work for, which names
/// their errors and labels their containers.
pub struct Phases<'a> {
    pub host: &'a Host<'a>,
    pub unit: &'a str,
}

/// One phase: what it does (its error names it), the image that runs it, what it mounts, its
/// words to the script, and how long it may take.
pub struct Phase<'a> {
    pub what: &'static str,
    pub image: &'a str,
    pub volumes: Vec<String>,
    pub args: &'a [&'a str],
    pub timeout: Duration,
}

/// Why a phase gave no answer. The container's output is the script's own account, so it is
/// quoted as text.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    #[error("exited {rc}:\n{tail}")]
    Exited { rc: i64, tail: String },
    #[error("timed out after {secs} s and was killed:\n{tail}")]
    TimedOut { secs: u64, tail: String },
    #[error("its output does not say {keys}:\n{tail}")]
    Unsaid { keys: &'static str, tail: String },
    #[error(transparent)]
    Podman(#[from] PodmanError),
}

impl Phases<'_> {
    /// Runs `phase` to its end: the output of a container that exited 0.
    pub fn run(&self, phase: Phase) -> Result<String, DataStepError> {
        let mut command = vec![
            "sh".to_string(),
            "-c".to_string(),
            SCRIPT.to_string(),
            "refit-data-step".to_string(),
        ];
        command.extend(phase.args.iter().map(|a| a.to_string()));
        let spec = OneOff {
            image: phase.image.to_string(),
            command,
            env: Vec::new(),
            volumes: phase.volumes,
            network: Some("none".to_string()),
            labels: HashMap::from([(
                crate::podman::oneoff::SOURCE_LABEL.to_string(),
                format!("data-step:{}", self.unit),
            )]),
        };
        let failed = match self.host.podman.run_oneoff(&spec, phase.timeout) {
            Ok(Finished::Exited(r)) if r.rc == 0 => return Ok(r.output),
            Ok(Finished::Exited(r)) => PhaseError::Exited {
                rc: r.rc,
                tail: tail(&r.output),
            },
            Ok(Finished::TimedOut { output }) => PhaseError::TimedOut {
                secs: phase.timeout.as_secs(),
                tail: tail(&output),
            },
            Err(e) => e.into(),
        };
        Err(self.failed(phase.what, failed))
    }

    /// The phase `what` ran, but its `output` does not say `keys`.
    pub fn unsaid(&self, what: &'static str, keys: &'static str, output: &str) -> DataStepError {
        let tail = tail(output);
        self.failed(what, PhaseError::Unsaid { keys, tail })
    }

    fn failed(&self, what: &'static str, source: PhaseError) -> DataStepError {
        DataStepError::Phase {
            unit: self.unit.to_string(),
            what,
            source,
        }
    }
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeClock, FakePodman, FakeQuadlet, FakeRegistry, FakeSystemd};
    use std::error::Error;

    /// What running the build phase on `podman` gives.
    fn build_on(podman: &FakePodman) -> Result<String, DataStepError> {
        let (systemd, registry, clock, quadlet) = (
            FakeSystemd::default(),
            FakeRegistry::default(),
            FakeClock::default(),
            FakeQuadlet::default(),
        );
        let host = Host {
            systemd: &systemd,
            podman,
            registry: &registry,
            clock: &clock,
            quadlet: &quadlet,
        };
        let phases = Phases {
            host: &host,
            unit: "db.service",
        };
        phases.run(Phase {
            what: "building the new cluster",
            image: "r/pg:17",
            volumes: vec![],
            args: &["build"],
            timeout: Duration::from_secs(5),
        })
    }

    #[test]
    fn a_failed_phase_keeps_its_exit_and_the_tail_of_its_output_as_the_cause() {
        let said: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let podman = FakePodman {
            oneoff_rc: 3,
            oneoff_says: [("build".to_string(), said)].into(),
            ..FakePodman::default()
        };
        let e = build_on(&podman).expect_err("exit 3");
        let msg = e.to_string();
        assert!(
            msg.starts_with("db.service: building the new cluster failed")
                && msg.contains("run again"),
            "{msg}"
        );
        let cause = e.source().expect("the phase's error is kept");
        assert!(
            matches!(
                cause.downcast_ref::<PhaseError>(),
                Some(PhaseError::Exited { rc: 3, .. })
            ),
            "{cause}"
        );
        assert!(
            msg.contains("line 40") && !msg.contains("line 10\n"),
            "{msg}"
        );
    }

    #[test]
    fn podmans_own_error_stays_the_source_under_the_phase() {
        let podman = FakePodman {
            oneoff_create_fails: true,
            ..FakePodman::default()
        };
        let e = build_on(&podman).expect_err("create refused");
        let phase = e.source().expect("phase");
        assert!(
            matches!(
                phase.downcast_ref::<PhaseError>(),
                Some(PhaseError::Podman(PodmanError::Api { .. }))
            ),
            "{phase:?}"
        );
        // A transparent wrapper hands on its inner error's source: what went wrong under
        // podman's call.
        let under = phase.source().expect("under the call");
        assert!(
            under.downcast_ref::<crate::podman::CallError>().is_some(),
            "{under:?}"
        );
        assert!(e.to_string().contains("the fake refuses the create"), "{e}");
    }
}
