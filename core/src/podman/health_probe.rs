//! Noticing health as soon as a service is ready, not at podman's next timer check.
//!
//! podman runs a container's health check at its start and then every `HealthInterval`: a
//! service not ready at its first check (an app that boots for a few seconds) is seen healthy
//! only at the next one, up to a whole interval (30 s is common) later. While a health-gated
//! wait sees the wanted container `starting`, [`HealthProbe`] runs the container's own health
//! command itself, as a plain exec that podman's health accounting never sees: a probe that
//! fails while the app boots never counts toward `Retries`, the failing streak or `unhealthy`.
//! Once a probe passes, podman is asked once to run its recorded check, so that its status
//! turns `healthy`; the wait goes on judging podman's status alone, as it did.
//!
//! It must not: probe more often than every [`SPACING`], wait on a probe past [`PROBE_TIMEOUT`]
//! or the wait's own deadline, probe a container without a health check or one podman already
//! called healthy or unhealthy, ask podman for its recorded check more than once a container,
//! or fail the wait: a probe's error is logged, and podman's own status decides.

use super::{Health, PodmanError};
use crate::time::Clock;
use std::time::{Duration, Instant};

/// The least time between the starts of two probes of one wait.
pub const SPACING: Duration = Duration::from_millis(250);

/// The longest a probe may run; one that runs longer is given up, and the container left to
/// podman's own checks for the rest of the wait.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the health probe asks of podman; a supertrait of `Podman`, so every podman has it. The
/// defaults know no health command, which turns probing off.
pub trait HealthProbes {
    /// The argv of the health command the container was created with, or None when it has
    /// none, or one refit does not run itself (a startup health check's, say).
    fn health_command(&self, _container: &str) -> Result<Option<Vec<String>>, ProbeError> {
        Ok(None)
    }
    /// Runs `argv` in the container as a plain exec, not through podman's health check, and
    /// returns its exit code; one that runs past `timeout` is `ProbeError::TimedOut`.
    fn exec_probe(
        &self,
        container: &str,
        _argv: &[String],
        _timeout: Duration,
    ) -> Result<i64, ProbeError> {
        Err(ProbeError::Unsupported {
            container: container.to_string(),
        })
    }
    /// Asks podman to run the container's recorded health check now, once; the status it
    /// reports after.
    fn run_recorded_check(
        &self,
        container: &str,
        _timeout: Duration,
    ) -> Result<Option<Health>, ProbeError> {
        Err(ProbeError::Unsupported {
            container: container.to_string(),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("the health probe of container {container} failed: {source}")]
    Podman {
        container: String,
        #[source]
        source: PodmanError,
    },
    #[error(
        "the health command of container {container} ran past {} s; refit leaves its health to podman's own checks",
        timeout.as_secs_f32()
    )]
    TimedOut {
        container: String,
        timeout: Duration,
    },
    #[error(
        "container {container}'s health command {test:?} is of a kind refit does not run; podman's own checks decide"
    )]
    UnknownTest {
        container: String,
        test: Vec<String>,
    },
    #[error("this podman cannot probe the health of container {container}")]
    Unsupported { container: String },
}

/// The argv a health check's `Test` runs: `CMD-SHELL x` is `/bin/sh -c x`, `CMD a b` is
/// `a b`. None for no check (`[]`, `NONE`); an error for a form refit does not know.
pub fn health_argv(container: &str, test: &[String]) -> Result<Option<Vec<String>>, ProbeError> {
    match test.split_first() {
        None => Ok(None),
        Some((kind, _)) if kind == "NONE" => Ok(None),
        Some((kind, rest)) if kind == "CMD" && !rest.is_empty() => Ok(Some(rest.to_vec())),
        Some((kind, [cmd])) if kind == "CMD-SHELL" => Ok(Some(vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            cmd.clone(),
        ])),
        _ => Err(ProbeError::UnknownTest {
            container: container.to_string(),
            test: test.to_vec(),
        }),
    }
}

/// One wait's probing: which container it probes, when it last did, and whether it is done
/// with that container.
#[derive(Debug)]
pub struct HealthProbe {
    deadline: Instant,
    last: Option<Instant>,
    container: String,
    argv: Option<Vec<String>>,
    /// No more probes of `container` in this wait: it has no command refit runs, a probe hung,
    /// or podman was asked for its recorded check already.
    done: bool,
}

impl HealthProbe {
    /// Probing for a wait that ends at `deadline`.
    pub fn until(deadline: Instant) -> Self {
        HealthProbe {
            deadline,
            last: None,
            container: String::new(),
            argv: None,
            done: false,
        }
    }

    /// Called on each look at a wanted container podman reports as `health`: probes it when
    /// it is `starting` and a probe is due, and asks podman for its recorded check once one
    /// passes. Returns the status podman reported after that check, which is the container's
    /// now; None when it did not run. Never fails; what goes wrong is logged.
    pub fn look(
        &mut self,
        podman: &dyn HealthProbes,
        clock: &dyn Clock,
        container: &str,
        health: &Health,
    ) -> Option<Health> {
        if *health != Health::Starting {
            return None;
        }
        if self.container != container {
            // Another container (systemd restarted the service): what was known is not its.
            self.container = container.to_string();
            self.argv = None;
            self.done = false;
        }
        let now = clock.now();
        let due = self.last.is_none_or(|t| now.duration_since(t) >= SPACING);
        let left = self.deadline.saturating_duration_since(now);
        if self.done || !due || left.is_zero() {
            return None;
        }
        self.last = Some(now);
        match self.probe(podman, container, PROBE_TIMEOUT.min(left)) {
            Ok(after) => after,
            Err(e) => {
                if matches!(
                    e,
                    ProbeError::TimedOut { .. } | ProbeError::UnknownTest { .. }
                ) {
                    self.done = true;
                }
                tracing::warn!(container, error = %e, "health probe");
                None
            }
        }
    }

    fn probe(
        &mut self,
        podman: &dyn HealthProbes,
        container: &str,
        timeout: Duration,
    ) -> Result<Option<Health>, ProbeError> {
        let argv = match &self.argv {
            Some(argv) => argv.clone(),
            None => match podman.health_command(container)? {
                Some(argv) => self.argv.insert(argv).clone(),
                None => {
                    self.done = true;
                    return Ok(None);
                }
            },
        };
        let rc = podman.exec_probe(container, &argv, timeout)?;
        tracing::debug!(container, rc, "health probe ran");
        if rc != 0 {
            return Ok(None);
        }
        // Asked once, whatever it answers: a recorded check that fails counts with podman, and
        // refit must never be what turns a container unhealthy.
        self.done = true;
        let now = podman.run_recorded_check(container, timeout)?;
        tracing::debug!(container, health = ?now, "podman ran its recorded health check");
        Ok(now)
    }
}

#[cfg(test)]
#[path = "health_probe_tests.rs"]
mod tests;
