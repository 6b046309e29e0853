//! One-off containers (migrations): create, start, wait with a deadline, collect the output
//! (its tail, bounded), and always remove the container, on success, failure and timeout alike.
//!
//! A run killed while its one-off ran leaves the container behind, still migrating. The next
//! run of the same command on the same image adopts it: waits for it and takes its exit as the
//! result, so a migration never runs twice side by side, nor twice in a row. Any other leftover
//! of the same unit is removed before a new one starts.

use super::PodmanError;
use super::api::PodmanApi;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptions, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StartContainerOptions, WaitContainerOptions,
};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneOffResult {
    pub rc: i64,
    /// The last MAX_OUTPUT bytes of stdout and stderr, interleaved as the container wrote them.
    pub output: String,
    /// The container was a killed run's, of the same command and image, and this run waited
    /// for it instead of starting another.
    pub adopted: bool,
}

/// The label that groups a unit's one-off containers.
pub const SOURCE_LABEL: &str = "io.refit.migration";
/// The label that says which command on which image a one-off runs.
const KEY_LABEL: &str = "io.refit.migration.key";
/// How much of a one-off's output is kept: its tail.
const MAX_OUTPUT: usize = 64 * 1024;

impl OneOff {
    /// What makes two one-offs the same work: the image and the command.
    fn key(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.image.as_bytes());
        for w in &self.command {
            h.update([0]);
            h.update(w.as_bytes());
        }
        format!("{:x}", h.finalize())[..32].to_string()
    }
}

/// Keeps the tail of a growing output within MAX_OUTPUT, on a character boundary.
fn keep_tail(output: &mut String) {
    if output.len() > 2 * MAX_OUTPUT {
        let mut cut = output.len() - MAX_OUTPUT;
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        output.drain(..cut);
    }
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
        let key = spec.key();
        let mut labels = spec.labels.clone();
        labels.insert(KEY_LABEL.to_string(), key.clone());
        let adopted = self.sweep_leftovers(spec, &key)?;
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: Some(spec.command.clone()),
            env: Some(spec.env.clone()),
            labels: Some(labels),
            host_config: Some(HostConfig {
                binds: Some(spec.volumes.clone()),
                network_mode: spec.network.clone(),
                ..HostConfig::default()
            }),
            ..ContainerCreateBody::default()
        };
        let docker = self.docker();
        self.block_on(async {
            let id = match &adopted {
                Some(id) => id.clone(),
                None => {
                    docker
                        .create_container(Some(CreateContainerOptionsBuilder::new().build()), body)
                        .await
                        .map_err(api("container create"))?
                        .id
                }
            };
            let outcome = async {
                if adopted.is_none() {
                    docker
                        .start_container(&id, None::<StartContainerOptions>)
                        .await
                        .map_err(api("container start"))?;
                }
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
                    keep_tail(&mut output);
                }
                let mut cut = output.len().saturating_sub(MAX_OUTPUT);
                while !output.is_char_boundary(cut) {
                    cut += 1;
                }
                output.drain(..cut);
                Ok(match waited {
                    Ok(rc) => Finished::Exited(OneOffResult {
                        rc: rc?,
                        output,
                        adopted: adopted.is_some(),
                    }),
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

impl PodmanApi {
    /// Removes the unit's leftover one-offs, but for one of the same work (image and command),
    /// which is returned to be adopted.
    fn sweep_leftovers(&self, spec: &OneOff, key: &str) -> Result<Option<String>, PodmanError> {
        let Some(source) = spec.labels.get(SOURCE_LABEL) else {
            return Ok(None);
        };
        let listed = self.list_labelled(vec![format!("{SOURCE_LABEL}={source}")])?;
        let mut adopt = None;
        for c in listed {
            let same = c
                .labels
                .as_ref()
                .and_then(|l| l.get(KEY_LABEL))
                .is_some_and(|k| k == key);
            if same && adopt.is_none() {
                adopt = Some(c.id);
                continue;
            }
            let rm = RemoveContainerOptionsBuilder::new().force(true).build();
            self.block_on(self.docker().remove_container(&c.id, Some(rm)))
                .map_err(|e| PodmanError::Api {
                    call: "container remove".into(),
                    detail: e.to_string(),
                })?;
        }
        Ok(adopt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_work_has_the_same_key_and_other_work_another() {
        let a = OneOff {
            image: "img1".into(),
            command: vec!["/bin/migrate".into()],
            ..OneOff::default()
        };
        let mut b = a.clone();
        b.env.push("X=1".into());
        assert_eq!(a.key(), b.key());
        let c = OneOff {
            command: vec!["/bin/migrate".into(), "--check".into()],
            ..a.clone()
        };
        assert_ne!(a.key(), c.key());
    }

    #[test]
    fn the_output_keeps_its_tail_within_the_bound() {
        let mut out = "é".repeat(MAX_OUTPUT * 2);
        keep_tail(&mut out);
        assert!(out.len() <= MAX_OUTPUT + 1, "{}", out.len());
        assert!(out.ends_with('é'));
    }
}
