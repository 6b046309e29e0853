//! `FakePodman`'s health probing: every container has the health check `test`, with its
//! timeout and retries; refit's probes exit with the codes `probe_rcs` scripts and are
//! recorded; podman's recorded check, when asked for, passes when the last probe did (or
//! fails when `recorded_check_fails`, counting toward the failing streak as podman's does),
//! and its `starting` containers are seen `healthy` once one passed. A call named in `hang`
//! hangs: it moves `clock` on by the timeout it was given, then fails.
//! `SimHost` knows no health command, so it is never probed.

use super::sim::SimHost;
use super::{FakeClock, FakePodman};
use crate::podman::health_probe::{HealthCommand, HealthProbes, ProbeError, health_argv};
use crate::podman::{ContainerInfo, Health, PodmanError};
use crate::time::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A call of `HealthProbes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Command,
    Exec,
    Streak,
    Check,
}

pub struct FakeHealth {
    /// Every container's `Config.Healthcheck.Test`; empty: no check.
    pub test: Vec<String>,
    /// The check's `Timeout`: 30 s unless set.
    pub check_timeout: Duration,
    /// The check's `Retries`: 3 unless set.
    pub retries: u32,
    /// podman's failing streak, as its checks left it.
    pub streak: Mutex<u32>,
    /// podman's recorded check fails, whatever the probe said.
    pub recorded_check_fails: bool,
    /// The exit codes of refit's probes, in turn, the last one repeated; none: 1.
    pub probe_rcs: Mutex<Vec<i64>>,
    /// How long each probe's command runs (on `clock`), when within its timeout.
    pub exec_takes: Duration,
    /// The calls that hang past the timeout they are given.
    pub hang: Vec<Call>,
    /// The clock a hanging call moves on.
    pub clock: Option<Arc<FakeClock>>,
    /// Every call and the timeout it was given.
    pub calls: Mutex<Vec<(Call, Duration)>>,
    /// Every probe run: the container and the argv.
    pub probes: Mutex<Vec<(String, Vec<String>)>>,
    /// Every container podman was asked to run its recorded check of.
    pub recorded_checks: Mutex<Vec<String>>,
    /// The status podman's recorded checks left.
    checked: Mutex<Option<Health>>,
    /// The last probe passed: the recorded check, run now, passes too.
    passed: Mutex<bool>,
}

impl Default for FakeHealth {
    fn default() -> Self {
        FakeHealth {
            test: Vec::new(),
            check_timeout: Duration::from_secs(30),
            retries: 3,
            streak: Mutex::new(0),
            recorded_check_fails: false,
            probe_rcs: Mutex::default(),
            exec_takes: Duration::ZERO,
            hang: Vec::new(),
            clock: None,
            calls: Mutex::default(),
            probes: Mutex::default(),
            recorded_checks: Mutex::default(),
            checked: Mutex::default(),
            passed: Mutex::default(),
        }
    }
}

impl FakeHealth {
    /// The container as podman reports it: as its recorded checks left it.
    pub fn as_seen(&self, c: &ContainerInfo) -> ContainerInfo {
        let mut c = c.clone();
        let checked = self.recorded_checks.lock().expect("checks").contains(&c.id);
        if let Some(h) = self.checked.lock().expect("checked").clone()
            && checked
            && c.health == Some(Health::Starting)
        {
            c.health = Some(h);
        }
        c
    }

    /// How many probes ran.
    pub fn probed(&self) -> usize {
        self.probes.lock().expect("probes").len()
    }

    /// Records the call; one that hangs moves the clock on by its timeout and fails.
    fn call(&self, call: Call, container: &str, timeout: Duration) -> Result<(), ProbeError> {
        self.calls.lock().expect("calls").push((call, timeout));
        if !self.hang.contains(&call) {
            return Ok(());
        }
        if let Some(clock) = &self.clock {
            clock.sleep(timeout);
        }
        Err(match call {
            Call::Exec => ProbeError::TimedOut {
                container: container.to_string(),
                timeout,
            },
            _ => ProbeError::Podman {
                container: container.to_string(),
                source: PodmanError::Api {
                    call: format!("{call:?}"),
                    detail: format!("no complete answer within {} s", timeout.as_secs()),
                },
            },
        })
    }
}

impl HealthProbes for FakePodman {
    fn health_command(
        &self,
        container: &str,
        timeout: Duration,
    ) -> Result<Option<HealthCommand>, ProbeError> {
        let h = &self.health;
        h.call(Call::Command, container, timeout)?;
        Ok(health_argv(container, &h.test)?.map(|argv| HealthCommand {
            argv,
            timeout: h.check_timeout,
            retries: h.retries,
        }))
    }

    fn exec_probe(
        &self,
        container: &str,
        argv: &[String],
        timeout: Duration,
    ) -> Result<i64, ProbeError> {
        let h = &self.health;
        h.probes
            .lock()
            .expect("probes")
            .push((container.to_string(), argv.to_vec()));
        h.call(Call::Exec, container, timeout)?;
        if let Some(clock) = &h.clock {
            clock.sleep(h.exec_takes.min(timeout));
        }
        if h.exec_takes > timeout {
            return Err(ProbeError::TimedOut {
                container: container.to_string(),
                timeout,
            });
        }
        let mut rcs = h.probe_rcs.lock().expect("rcs");
        let rc = match rcs.len() {
            0 => 1,
            1 => rcs[0],
            _ => rcs.remove(0),
        };
        *h.passed.lock().expect("passed") = rc == 0;
        Ok(rc)
    }

    fn failing_streak(&self, container: &str, timeout: Duration) -> Result<u32, ProbeError> {
        let h = &self.health;
        h.call(Call::Streak, container, timeout)?;
        Ok(*h.streak.lock().expect("streak"))
    }

    fn run_recorded_check(
        &self,
        container: &str,
        timeout: Duration,
    ) -> Result<Option<Health>, ProbeError> {
        let h = &self.health;
        h.recorded_checks
            .lock()
            .expect("checks")
            .push(container.to_string());
        h.call(Call::Check, container, timeout)?;
        let mut streak = h.streak.lock().expect("streak");
        // podman's own accounting: a failure counts, and at `Retries` the container is
        // unhealthy; a pass clears the streak.
        let health = if *h.passed.lock().expect("passed") && !h.recorded_check_fails {
            *streak = 0;
            Health::Healthy
        } else {
            *streak += 1;
            if *streak >= h.retries {
                Health::Unhealthy
            } else {
                Health::Starting
            }
        };
        *h.checked.lock().expect("checked") = Some(health.clone());
        Ok(Some(health))
    }
}

impl HealthProbes for SimHost {}
