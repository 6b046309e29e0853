//! `FakePodman`'s health probing: every container has the health check `test`; refit's probes
//! exit with the codes `probe_rcs` scripts and are recorded; once podman was asked to run its
//! recorded check after a probe passed, its `starting` containers are seen `healthy`.
//! `SimHost` knows no health command, so it is never probed.

use super::FakePodman;
use super::sim::SimHost;
use crate::podman::health_probe::{HealthProbes, ProbeError, health_argv};
use crate::podman::{ContainerInfo, Health};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct FakeHealth {
    /// Every container's `Config.Healthcheck.Test`; empty: no check.
    pub test: Vec<String>,
    /// The exit codes of refit's probes, in turn, the last one repeated; none: 1.
    pub probe_rcs: Mutex<Vec<i64>>,
    /// Every probe hangs past its timeout.
    pub probe_hangs: bool,
    /// Every probe run: the container and the argv.
    pub probes: Mutex<Vec<(String, Vec<String>)>>,
    /// Every container podman was asked to run its recorded check of.
    pub recorded_checks: Mutex<Vec<String>>,
    /// The last probe passed: the recorded check, run now, passes too.
    passed: Mutex<bool>,
}

impl FakeHealth {
    /// The container as podman reports it: `healthy` once a recorded check passed.
    pub fn as_seen(&self, c: &ContainerInfo) -> ContainerInfo {
        let mut c = c.clone();
        let checked = self.recorded_checks.lock().expect("checks").contains(&c.id);
        if checked && *self.passed.lock().expect("passed") && c.health == Some(Health::Starting) {
            c.health = Some(Health::Healthy);
        }
        c
    }

    /// How many probes ran.
    pub fn probed(&self) -> usize {
        self.probes.lock().expect("probes").len()
    }
}

impl HealthProbes for FakePodman {
    fn health_command(&self, container: &str) -> Result<Option<Vec<String>>, ProbeError> {
        health_argv(container, &self.health.test)
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
        if h.probe_hangs {
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

    fn run_recorded_check(
        &self,
        container: &str,
        _timeout: Duration,
    ) -> Result<Option<Health>, ProbeError> {
        let h = &self.health;
        h.recorded_checks
            .lock()
            .expect("checks")
            .push(container.to_string());
        let passed = *h.passed.lock().expect("passed");
        Ok(Some(if passed {
            Health::Healthy
        } else {
            Health::Starting
        }))
    }
}

impl HealthProbes for SimHost {}
