//! One-off containers (migrations): create, start, wait with a deadline, collect the output,
//! and always remove the container, on success, failure and timeout alike.

use super::PodmanError;
use super::api::PodmanApi;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptions, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StartContainerOptions, WaitContainerOptions,
};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::time::Duration;

/// What to run: the borrowed image, volumes, env and network of a service, and a command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneOff {
    pub image: String,
    pub command: Vec<String>,
    pub env: Vec<String>,
    /// `SOURCE:DEST[:OPTIONS]`, as `podman run -v` takes them.
    pub volumes: Vec<String>,
    pub network: Option<String>,
    pub labels: HashMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneOffResult {
    pub rc: i64,
    /// stdout and stderr, interleaved as the container wrote them.
    pub output: String,
}

pub enum Finished {
    Exited(OneOffResult),
    TimedOut { output: String },
}

impl PodmanApi {
    pub(super) fn run_oneoff_impl(
        &self,
        spec: &OneOff,
        timeout: Duration,
    ) -> Result<Finished, PodmanError> {
        let api = |call: &'static str| {
            move |e: bollard::errors::Error| PodmanError::Api {
                call: call.to_string(),
                detail: e.to_string(),
            }
        };
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: Some(spec.command.clone()),
            env: Some(spec.env.clone()),
            labels: Some(spec.labels.clone()),
            host_config: Some(HostConfig {
                binds: Some(spec.volumes.clone()),
                network_mode: spec.network.clone(),
                ..HostConfig::default()
            }),
            ..ContainerCreateBody::default()
        };
        let docker = self.docker();
        self.block_on(async {
            let created = docker
                .create_container(Some(CreateContainerOptionsBuilder::new().build()), body)
                .await
                .map_err(api("container create"))?;
            let id = created.id;
            let outcome = async {
                docker
                    .start_container(&id, None::<StartContainerOptions>)
                    .await
                    .map_err(api("container start"))?;
                let waited = tokio::time::timeout(timeout, async {
                    let mut stream = docker.wait_container(&id, None::<WaitContainerOptions>);
                    match stream.next().await {
                        Some(Ok(r)) => Ok(r.status_code),
                        // bollard reports a non-zero exit as an error that carries the code.
                        Some(Err(bollard::errors::Error::DockerContainerWaitError {
                            code,
                            ..
                        })) => Ok(code),
                        Some(Err(e)) => Err(api("container wait")(e)),
                        None => Ok(-1),
                    }
                })
                .await;
                if waited.is_err() {
                    let _ = docker
                        .kill_container(&id, None::<KillContainerOptions>)
                        .await;
                }
                let mut output = String::new();
                let opts = LogsOptionsBuilder::new().stdout(true).stderr(true).build();
                let mut logs = docker.logs(&id, Some(opts));
                while let Some(Ok(chunk)) = logs.next().await {
                    output.push_str(&chunk.to_string());
                }
                Ok(match waited {
                    Ok(rc) => Finished::Exited(OneOffResult { rc: rc?, output }),
                    Err(_) => Finished::TimedOut { output },
                })
            }
            .await;
            // Removed whatever happened above: no migration container is ever left behind.
            let rm = RemoveContainerOptionsBuilder::new()
                .force(true)
                .v(false)
                .build();
            let removed = docker
                .remove_container(&id, Some(rm))
                .await
                .map_err(api("container remove"));
            let outcome = outcome?;
            removed?;
            Ok(outcome)
        })
    }
}
