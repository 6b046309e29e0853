//! Noticing health as soon as a service is ready, not at podman's next timer check.
//!
//! podman runs a container's health check at its start and then every `HealthInterval`: a
//! service not ready at its first check (an app that boots for a few seconds) is seen healthy
//! only at the next one, up to a whole interval (30 s is common) later. While a health-gated
//! wait sees the wanted container `starting`, [`HealthProbe`] runs the container's own health
//! command itself, as a plain exec that podman's health accounting never sees: a probe that
//! fails while the app boots never counts toward `Retries`, the failing streak or `unhealthy`.
//! Once a probe passes, podman is asked once to run its recorded check, so that its status
//! turns `healthy`; the wait goes on judging podman's status alone, as it did. A wait that only
//! needs to know the service answers takes the pass itself (`take_a_pass`: a migration's first
//! wave, after which the rest of its image starts), and the recorded check is asked for at the
//! next look made without, by the wait that judges podman's status.
//!
//! That recorded check is a real one: should it fail after all (podman's `HealthTimeout` is
//! shorter than the probe took, or the app is flaky), it counts toward the failing streak, and
//! at `HealthRetries` failures in a row podman turns the container unhealthy and runs its
//! `HealthOnFailure=` action. So a probe is bounded by the check's own timeout too, and the
//! recorded check is asked for only while one more failure leaves the streak short of
//! `Retries`; otherwise podman's timer decides.
//!
//! It must not: probe more often than [`spacing`] allows or more than [`MAX_PROBES`] times a
//! container per wait (each exec session stays with podman for minutes); let any call of a
//! probe run past the probe's deadline ([`PROBE_TIMEOUT`], the check's timeout, the wait's
//! deadline); probe a container without a health check, one whose check a single failure
//! turns unhealthy, or one podman already called healthy or unhealthy; ask podman for its
//! recorded check more than once a container, or when its failing would turn the container
//! unhealthy; or fail the wait: a probe's error is logged (a warning once per container,
//! then at debug), and podman's own status decides.

use super::{Health, PodmanError};
use crate::time::Clock;
use std::time::{Duration, Instant};

/// The least time between the starts of two probes of one wait, for its first
/// [`FAST_PROBES`] probes; see [`spacing`].
pub const SPACING: Duration = Duration::from_millis(250);

/// How many probes of a container come [`SPACING`] apart before the spacing grows.
pub const FAST_PROBES: u32 = 8;

/// The most the spacing grows to.
pub const MAX_SPACING: Duration = Duration::from_secs(2);

/// The most probes of one container in one wait: podman keeps every exec session of its API
/// for minutes after it ended, so they must not pile up over a long boot.
pub const MAX_PROBES: u32 = 120;

/// The longest a probe may run, all its calls together; one that runs longer is given up,
/// and the container left to podman's own checks for the rest of the wait.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// podman's health check timeout when the container's config records none.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// The least time between the start of the probe that was the `probes`-th of a container
/// and the next one: [`SPACING`] for the first [`FAST_PROBES`], then half as long again
/// each time, up to [`MAX_SPACING`].
pub fn spacing(probes: u32) -> Duration {
    (FAST_PROBES..probes).fold(SPACING, |s, _| (s * 3 / 2).min(MAX_SPACING))
}

/// The health check a container was created with, as far as a probe needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCommand {
    /// What its `Test` runs.
    pub argv: Vec<String>,
    /// podman's bound on one run (`HealthTimeout=`): a longer run fails.
    pub timeout: Duration,
    /// The failures in a row that turn the container unhealthy (`HealthRetries=`); podman
    /// compares the streak with it as recorded, so 0 (none recorded) means the first failure.
    pub retries: u32,
}

/// What the health probe asks of podman; a supertrait of `Podman`, so every podman has it. The
/// defaults know no health command, which turns probing off. Each call is given what is left
/// of its probe's deadline, and must not take longer.
pub trait HealthProbes {
    /// The health check the container was created with, or None when it has none, or one
    /// refit does not run itself (a startup health check's, say).
    fn health_command(
        &self,
        _container: &str,
        _timeout: Duration,
    ) -> Result<Option<HealthCommand>, ProbeError> {
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
    /// How many of podman's checks of the container failed in a row, now.
    fn failing_streak(&self, container: &str, _timeout: Duration) -> Result<u32, ProbeError> {
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
        "the health probe of container {container} ran past {} s; refit leaves its health to podman's own checks",
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

/// One wait's probing: which container it probes, when it last did, how often, and whether
/// it is done with that container.
#[derive(Debug)]
pub struct HealthProbe {
    deadline: Instant,
    last: Option<Instant>,
    container: String,
    command: Option<HealthCommand>,
    /// The probes of `container` begun in this wait.
    probes: u32,
    /// A probe's error was logged as a warning for `container`; later ones go to debug.
    warned: bool,
    /// No more probes of `container` in this wait: it has no command refit runs, a probe ran
    /// to its deadline, it was probed `MAX_PROBES` times, or podman's recorded check was asked
    /// for (or left to its timer).
    done: bool,
    /// A probe passed whose recorded check waits for a look that does not take a pass
    /// (`take_a_pass`).
    passed: bool,
    /// A passing probe is enough for now: podman's recorded check is left to a later look.
    take_a_pass: bool,
}

impl HealthProbe {
    /// Probing for a wait that ends at `deadline`.
    pub fn until(deadline: Instant) -> Self {
        HealthProbe {
            deadline,
            last: None,
            container: String::new(),
            command: None,
            probes: 0,
            warned: false,
            done: false,
            passed: false,
            take_a_pass: false,
        }
    }

    /// Whether a passing probe ends the looks for now, podman's recorded check left to the
    /// next look made without: for a wait that only needs to know the service answers (the
    /// first wave of a migration's starts, whose next wave then waits for podman's status).
    pub fn take_a_pass(&mut self, take: bool) {
        self.take_a_pass = take;
    }

    /// True when a probe of the container passed and podman's recorded check is yet to come.
    pub fn passed(&self) -> bool {
        self.passed
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
            self.command = None;
            self.probes = 0;
            self.warned = false;
            self.done = false;
            self.passed = false;
        }
        let now = clock.now();
        let left = self.deadline.saturating_duration_since(now);
        let mut until = now + PROBE_TIMEOUT.min(left);
        let looked = if self.passed {
            // A pass taken earlier: its recorded check, once a look does not take it.
            if self.take_a_pass {
                return None;
            }
            let cmd = self.command.clone()?;
            self.record(podman, clock, container, &cmd, now, until)
        } else {
            let due = self
                .last
                .is_none_or(|t| now.duration_since(t) >= spacing(self.probes));
            if self.done || !due || left.is_zero() {
                return None;
            }
            if self.probes >= MAX_PROBES {
                tracing::debug!(container, probes = self.probes, "no more health probes");
                self.done = true;
                return None;
            }
            self.last = Some(now);
            self.probes += 1;
            self.probe(podman, clock, container, now, &mut until)
        };
        looked.unwrap_or_else(|e| {
            let past = clock.now() >= until;
            self.failed(container, e, past)
        })
    }

    /// Logs a probe's error, and ends the probing when it ran `past` its deadline or can never
    /// work: an exec given up runs on in the container, so no more of them.
    fn failed(&mut self, container: &str, e: ProbeError, past: bool) -> Option<Health> {
        let last = matches!(
            e,
            ProbeError::TimedOut { .. } | ProbeError::UnknownTest { .. }
        );
        if last || past {
            self.done = true;
        }
        if self.warned {
            tracing::debug!(container, error = %e, "health probe");
        } else {
            self.warned = true;
            tracing::warn!(container, error = %e, "health probe");
        }
        None
    }

    /// One probe begun at `began`, all of whose calls end by `until`; that is moved up to the
    /// check's own timeout after `began`, when sooner, once the check is known.
    fn probe(
        &mut self,
        podman: &dyn HealthProbes,
        clock: &dyn Clock,
        container: &str,
        began: Instant,
        until: &mut Instant,
    ) -> Result<Option<Health>, ProbeError> {
        let left = |until: Instant| time_left(clock, container, began, until);
        let cmd = match &self.command {
            Some(cmd) => cmd.clone(),
            None => match podman.health_command(container, left(*until)?)? {
                Some(cmd) => self.command.insert(cmd).clone(),
                None => {
                    self.done = true;
                    return Ok(None);
                }
            },
        };
        if cmd.retries <= 1 {
            // A single failing recorded check would turn it unhealthy: podman's timer decides.
            tracing::debug!(container, "health check fails at once; left to podman");
            self.done = true;
            return Ok(None);
        }
        *until = (*until).min(began + cmd.timeout);
        let until = *until;
        let rc = podman.exec_probe(container, &cmd.argv, left(until)?)?;
        tracing::debug!(container, rc, "health probe ran");
        if rc != 0 {
            return Ok(None);
        }
        if self.take_a_pass {
            self.passed = true;
            return Ok(None);
        }
        self.record(podman, clock, container, &cmd, began, until)
    }

    /// Asks podman for its recorded check once, after a passing probe, whatever it answers, and
    /// only while its failing could not turn the container unhealthy: refit must never be what
    /// does. All its calls end by `until`.
    fn record(
        &mut self,
        podman: &dyn HealthProbes,
        clock: &dyn Clock,
        container: &str,
        cmd: &HealthCommand,
        began: Instant,
        until: Instant,
    ) -> Result<Option<Health>, ProbeError> {
        let left = |until: Instant| time_left(clock, container, began, until);
        self.passed = false;
        let streak = podman.failing_streak(container, left(until)?)?;
        self.done = true;
        if streak.saturating_add(1) >= cmd.retries {
            tracing::debug!(container, streak, "health check left to podman's timer");
            return Ok(None);
        }
        let now = podman.run_recorded_check(container, left(until)?)?;
        tracing::debug!(container, health = ?now, "podman ran its recorded health check");
        Ok(now)
    }
}

/// What is left of a probe's time until `until`; none left is the probe's timeout.
fn time_left(
    clock: &dyn Clock,
    container: &str,
    began: Instant,
    until: Instant,
) -> Result<Duration, ProbeError> {
    let left = until.saturating_duration_since(clock.now());
    if left.is_zero() {
        Err(ProbeError::TimedOut {
            container: container.to_string(),
            timeout: until - began,
        })
    } else {
        Ok(left)
    }
}

#[cfg(test)]
#[path = "health_probe_tests.rs"]
mod tests;
