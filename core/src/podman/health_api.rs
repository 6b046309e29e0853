//! `HealthProbes` over libpod's API (`wire`): the health check (command, timeout, retries)
//! and its failing streak from the container's inspect, the probe as an exec session
//! (created, started attached until its command ends, then inspected for its exit code), and
//! podman's recorded check run on request. Each call is bounded by the timeout it is given,
//! retries included. libpod has no call that stops an exec: a probe given up at its timeout
//! runs on in the container until its command ends, which is why the wait probes that
//! container no more.

use super::health_probe::{
    DEFAULT_CHECK_TIMEOUT, HealthCommand, HealthProbes, ProbeError, health_argv,
};
use super::{Health, PodmanApi, PodmanError, wire};
use serde::Deserialize;
use std::time::{Duration, Instant};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspect {
    #[serde(default)]
    config: Config,
    #[serde(default)]
    state: State,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct State {
    #[serde(default)]
    health: Option<HealthState>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HealthState {
    #[serde(default)]
    failing_streak: i64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct Config {
    #[serde(default)]
    healthcheck: Option<Check>,
    /// A startup check runs before the regular one; podman's status means the startup
    /// check's until it passed, so refit leaves such a container to podman.
    #[serde(default)]
    startup_health_check: Option<Check>,
}

/// podman's `Schema2HealthConfig`: durations in nanoseconds, zeros left out.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Check {
    #[serde(default)]
    test: Vec<String>,
    #[serde(default)]
    timeout: i64,
    #[serde(default)]
    retries: i64,
}

impl Check {
    /// What a probe needs of it. podman fills in no retries for an image's check that names
    /// none, and compares the failing streak with the 0 it keeps: the first failure turns the
    /// container unhealthy, so none stays 0 here. A timeout is always filled in by podman;
    /// none is taken as podman's default.
    fn command(&self, container: &str) -> Result<Option<HealthCommand>, ProbeError> {
        let Some(argv) = health_argv(container, &self.test)? else {
            return Ok(None);
        };
        let timeout = u64::try_from(self.timeout)
            .ok()
            .filter(|&t| t > 0)
            .map_or(DEFAULT_CHECK_TIMEOUT, Duration::from_nanos);
        Ok(Some(HealthCommand {
            argv,
            timeout,
            retries: u32::try_from(self.retries.max(0)).unwrap_or(u32::MAX),
        }))
    }
}

#[derive(Deserialize)]
struct Created {
    #[serde(rename = "Id")]
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ExecState {
    #[serde(default)]
    running: bool,
    #[serde(default)]
    exit_code: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CheckResult {
    #[serde(default)]
    status: String,
}

fn podman_err(container: &str) -> impl Fn(PodmanError) -> ProbeError + '_ {
    move |source| ProbeError::Podman {
        container: container.to_string(),
        source,
    }
}

impl PodmanApi {
    fn post_json(
        &self,
        call: &str,
        path: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<wire::Response, PodmanError> {
        let body = body.to_string();
        let req = wire::Request {
            body: body.as_bytes(),
            ..wire::Request::new(call, "POST", path, timeout)
        };
        let answer = wire::send(self.socket(), &req)?;
        match answer.status {
            200..=299 => Ok(answer),
            status => Err(wire::refused(call, status, &answer.body)),
        }
    }

    fn inspect(&self, container: &str, timeout: Duration) -> Result<Option<Inspect>, ProbeError> {
        let path = format!("/v4.0.0/libpod/containers/{}/json", wire::encode(container));
        wire::get_json(self.socket(), "container inspect", &path, timeout)
            .map_err(podman_err(container))
    }
}

impl HealthProbes for PodmanApi {
    fn health_command(
        &self,
        container: &str,
        timeout: Duration,
    ) -> Result<Option<HealthCommand>, ProbeError> {
        let Some(config) = self.inspect(container, timeout)?.map(|i| i.config) else {
            return Ok(None);
        };
        if config
            .startup_health_check
            .is_some_and(|c| !c.test.is_empty())
        {
            return Ok(None);
        }
        match config.healthcheck {
            Some(check) => check.command(container),
            None => Ok(None),
        }
    }

    fn failing_streak(&self, container: &str, timeout: Duration) -> Result<u32, ProbeError> {
        let Some(inspect) = self.inspect(container, timeout)? else {
            return Err(podman_err(container)(PodmanError::Api {
                call: "container inspect".into(),
                detail: format!("container {container} is gone"),
            }));
        };
        let streak = inspect.state.health.map_or(0, |h| h.failing_streak.max(0));
        Ok(u32::try_from(streak).unwrap_or(u32::MAX))
    }

    fn exec_probe(
        &self,
        container: &str,
        argv: &[String],
        timeout: Duration,
    ) -> Result<i64, ProbeError> {
        let err = podman_err(container);
        let began = Instant::now();
        let path = format!("/v4.0.0/libpod/containers/{}/exec", wire::encode(container));
        let body = serde_json::json!({"Cmd": argv, "AttachStdout": true, "AttachStderr": true});
        let created = self
            .post_json("exec create", &path, &body, timeout)
            .map_err(&err)?;
        let Created { id } = serde_json::from_slice(&created.body).map_err(|e| {
            err(PodmanError::Api {
                call: "exec create".into(),
                detail: format!("podman's answer does not parse: {e}"),
            })
        })?;
        // Attached: podman answers once the command ended; its output is not kept.
        let start = format!("/v4.0.0/libpod/exec/{}/start", wire::encode(&id));
        let timed_out = || ProbeError::TimedOut {
            container: container.to_string(),
            timeout,
        };
        let left = || Some(timeout.saturating_sub(began.elapsed())).filter(|l| !l.is_zero());
        let body = serde_json::json!({"Detach": false, "Tty": false});
        let started = match left() {
            Some(left) => self.post_json("exec start", &start, &body, left),
            None => return Err(timed_out()),
        };
        if let Err(e) = started {
            return Err(if left().is_none() {
                timed_out()
            } else {
                err(e)
            });
        }
        let path = format!("/v4.0.0/libpod/exec/{}/json", wire::encode(&id));
        let left = left().ok_or_else(timed_out)?;
        let state: Option<ExecState> =
            wire::get_json(self.socket(), "exec inspect", &path, left).map_err(&err)?;
        match state {
            Some(ExecState {
                running: false,
                exit_code,
            }) => Ok(exit_code),
            _ => Err(err(PodmanError::Api {
                call: "exec inspect".into(),
                detail: format!("exec session {id} has no exit code after its command ended"),
            })),
        }
    }

    fn run_recorded_check(
        &self,
        container: &str,
        timeout: Duration,
    ) -> Result<Option<Health>, ProbeError> {
        let path = format!(
            "/v4.0.0/libpod/containers/{}/healthcheck",
            wire::encode(container)
        );
        // Sent once, never again: each run of the check counts with podman.
        let req = wire::Request::new("container healthcheck", "GET", &path, timeout);
        let answer = wire::send_once(self.socket(), &req).map_err(podman_err(container))?;
        if !(200..=299).contains(&answer.status) {
            let refused = wire::refused("container healthcheck", answer.status, &answer.body);
            return Err(podman_err(container)(refused));
        }
        let got: CheckResult = serde_json::from_slice(&answer.body).map_err(|e| {
            podman_err(container)(PodmanError::Api {
                call: "container healthcheck".into(),
                detail: format!("podman's answer does not parse: {e}"),
            })
        })?;
        Ok(Health::parse(&got.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_comes_from_the_inspects_healthcheck() {
        let i: Inspect = serde_json::from_value(serde_json::json!({
            "Config": {"Healthcheck": {"Test": ["CMD-SHELL", "test -f /ready"], "Interval": 30}},
        }))
        .expect("an inspect");
        let test = i.config.healthcheck.expect("a check").test;
        assert_eq!(
            health_argv("c1", &test).expect("known"),
            Some(vec!["/bin/sh".into(), "-c".into(), "test -f /ready".into()])
        );
        let none: Inspect = serde_json::from_value(serde_json::json!({"Config": {}})).expect("ok");
        assert!(none.config.healthcheck.is_none());
    }

    #[test]
    fn the_checks_timeout_retries_and_failing_streak_come_from_the_inspect() {
        // podman 5.4's inspect of a quadlet with HealthTimeout=2s and HealthRetries=5.
        let i: Inspect = serde_json::from_value(serde_json::json!({
            "Config": {"Healthcheck": {
                "Test": ["CMD", "true"], "Interval": 30_000_000_000_i64,
                "Timeout": 2_000_000_000_i64, "Retries": 5,
            }},
            "State": {"Health": {"Status": "starting", "FailingStreak": 2, "Log": null}},
        }))
        .expect("an inspect");
        let cmd = i.config.healthcheck.expect("a check").command("c1");
        assert_eq!(
            cmd.expect("known"),
            Some(HealthCommand {
                argv: vec!["true".into()],
                timeout: Duration::from_secs(2),
                retries: 5,
            })
        );
        assert_eq!(i.state.health.expect("a status").failing_streak, 2);
    }

    #[test]
    fn a_check_without_retries_fails_at_once_and_one_without_timeout_has_podmans() {
        // An image's HEALTHCHECK without --retries: podman keeps 0, and its first failure
        // turns the container unhealthy.
        let i: Inspect = serde_json::from_value(serde_json::json!({
            "Config": {"Healthcheck": {"Test": ["CMD-SHELL", "true"]}},
            "State": {},
        }))
        .expect("an inspect");
        let cmd = i.config.healthcheck.expect("a check").command("c1");
        let cmd = cmd.expect("known").expect("a command");
        assert_eq!((cmd.timeout, cmd.retries), (DEFAULT_CHECK_TIMEOUT, 0));
        assert!(i.state.health.is_none());
    }
}
