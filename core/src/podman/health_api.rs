//! `HealthProbes` over libpod's API (`wire`): the health command from the container's
//! inspect, the probe as an exec session (created, started attached until its command ends,
//! then inspected for its exit code), and podman's recorded check run on request. libpod has
//! no call that stops an exec: a probe given up at its timeout runs on in the container until
//! its command ends, which is why the wait probes that container no more.

use super::health_probe::{HealthProbes, ProbeError, health_argv};
use super::{Health, PodmanApi, PodmanError, wire};
use serde::Deserialize;
use std::time::{Duration, Instant};

/// The bound of the calls around a probe (inspect, exec create and inspect): quick ones.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspect {
    #[serde(default)]
    config: Config,
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

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Check {
    #[serde(default)]
    test: Vec<String>,
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
}

impl HealthProbes for PodmanApi {
    fn health_command(&self, container: &str) -> Result<Option<Vec<String>>, ProbeError> {
        let path = format!("/v4.0.0/libpod/containers/{}/json", wire::encode(container));
        let got: Option<Inspect> =
            wire::get_json(self.socket(), "container inspect", &path, CALL_TIMEOUT)
                .map_err(podman_err(container))?;
        let Some(config) = got.map(|i| i.config) else {
            return Ok(None);
        };
        if config
            .startup_health_check
            .is_some_and(|c| !c.test.is_empty())
        {
            return Ok(None);
        }
        let test = config.healthcheck.map(|c| c.test).unwrap_or_default();
        health_argv(container, &test)
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
            .post_json("exec create", &path, &body, CALL_TIMEOUT.min(timeout))
            .map_err(&err)?;
        let Created { id } = serde_json::from_slice(&created.body).map_err(|e| {
            err(PodmanError::Api {
                call: "exec create".into(),
                detail: format!("podman's answer does not parse: {e}"),
            })
        })?;
        // Attached: podman answers once the command ended; its output is not kept.
        let start = format!("/v4.0.0/libpod/exec/{}/start", wire::encode(&id));
        let left = timeout.saturating_sub(began.elapsed());
        let body = serde_json::json!({"Detach": false, "Tty": false});
        if let Err(e) = self.post_json("exec start", &start, &body, left) {
            return Err(if began.elapsed() >= timeout {
                ProbeError::TimedOut {
                    container: container.to_string(),
                    timeout,
                }
            } else {
                err(e)
            });
        }
        let path = format!("/v4.0.0/libpod/exec/{}/json", wire::encode(&id));
        let state: Option<ExecState> =
            wire::get_json(self.socket(), "exec inspect", &path, CALL_TIMEOUT).map_err(&err)?;
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
}
