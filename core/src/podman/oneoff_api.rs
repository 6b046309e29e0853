//! The phases of a one-off container (`oneoff`) over the podman API: prepare (sweep, create,
//! init), run to its exit or deadline, read its output's tail, remove.

use super::api::PodmanApi;
use super::leftovers::{KEY_LABEL, Sweep, sweep};
use super::oneoff::{Ended, OneOff, Prepared, SOURCE_LABEL};
use super::{PodmanError, wire};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptions, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StartContainerOptions, WaitContainerOptions,
};
use futures_util::StreamExt;
use std::time::Duration;

/// How much of a one-off's output is kept: its tail.
const MAX_OUTPUT: usize = 64 * 1024;
/// The bound of an init: the OCI runtime's create, a fraction of a second on a loaded host.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);

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

/// True when a volume (`SOURCE:DEST[:OPTIONS]`) has podman relabel it for SELinux (`z`, `Z`)
/// or chown it to the container's user (`U`), which it does as it initializes the container.
fn changes_its_volumes(volumes: &[String]) -> bool {
    volumes.iter().any(|v| {
        v.splitn(3, ':')
            .nth(2)
            .is_some_and(|opts| opts.split(',').any(|o| matches!(o, "z" | "Z" | "U")))
    })
}

impl PodmanApi {
    pub(super) fn prepare_oneoff_impl(&self, spec: &OneOff) -> Result<Prepared, PodmanError> {
        let key = spec.key();
        if let Some(adopted) = self.sweep_leftovers(spec, &key)? {
            return Ok(adopted);
        }
        let mut labels = spec.labels.clone();
        labels.insert(KEY_LABEL.to_string(), key);
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
        let opts = CreateContainerOptionsBuilder::new().build();
        let created = self
            .block_on(self.docker().create_container(Some(opts), body))
            .map_err(Self::api_err("container create"))?;
        let prepared = Prepared {
            id: created.id,
            adopted: false,
            recorded_exit: None,
        };
        // A volume podman relabels or chowns is changed at init: done now, under the service
        // that still runs on it. Such a one-off is initialized by its start, after the stop.
        if changes_its_volumes(&spec.volumes) {
            return Ok(prepared);
        }
        if let Err(e) = self.init_oneoff(&prepared.id) {
            // The init's error is the one to report; a container left by a failed removal is
            // a leftover the next prepare sweeps.
            let _ = self.remove_oneoff_impl(&prepared);
            return Err(e);
        }
        Ok(prepared)
    }

    /// libpod's init: the OCI runtime creates the container and conmon waits for its start,
    /// which then only runs the process (tens of ms of a migration's downtime less, measured
    /// on the testbed).
    fn init_oneoff(&self, id: &str) -> Result<(), PodmanError> {
        let path = format!("/v4.0.0/libpod/containers/{}/init", wire::encode(id));
        let req = wire::Request::new("container init", "POST", &path, INIT_TIMEOUT);
        let wire::Response { status, body } = wire::send(self.socket(), &req)?;
        match status {
            // 304: initialized already.
            200..=299 | 304 => Ok(()),
            _ => Err(wire::refused("container init", status, &body)),
        }
    }

    pub(super) fn run_prepared_impl(
        &self,
        prepared: &Prepared,
        timeout: Duration,
    ) -> Result<Ended, PodmanError> {
        let (docker, id) = (self.docker(), prepared.id.as_str());
        if let Some(rc) = prepared.recorded_exit {
            return Ok(Ended::Exited { rc });
        }
        self.block_on(async {
            if !prepared.adopted {
                docker
                    .start_container(id, None::<StartContainerOptions>)
                    .await
                    .map_err(Self::api_err("container start"))?;
            }
            match tokio::time::timeout(timeout, self.wait_exit(id)).await {
                Ok(rc) => Ok(Ended::Exited { rc: rc? }),
                Err(_) => {
                    let _ = docker
                        .kill_container(id, None::<KillContainerOptions>)
                        .await;
                    Ok(Ended::TimedOut)
                }
            }
        })
    }

    pub(super) fn oneoff_output_impl(&self, prepared: &Prepared) -> String {
        self.block_on(self.output_tail(&prepared.id))
    }

    pub(super) fn remove_oneoff_impl(&self, prepared: &Prepared) -> Result<(), PodmanError> {
        let rm = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(false)
            .build();
        self.block_on(self.docker().remove_container(&prepared.id, Some(rm)))
            .map_err(Self::api_err("container remove"))
    }

    /// The container's exit code, once it exited.
    async fn wait_exit(&self, id: &str) -> Result<i64, PodmanError> {
        let mut stream = self
            .docker()
            .wait_container(id, None::<WaitContainerOptions>);
        match stream.next().await {
            Some(Ok(r)) => exit_code(&r).map_err(|detail| PodmanError::ExitUnknown {
                container: id.to_string(),
                detail,
            }),
            // bollard reports a non-zero exit as an error that carries the code.
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(e)) => Err(Self::api_err("container wait")(e)),
            None => Ok(-1),
        }
    }

    /// The last MAX_OUTPUT bytes of the container's stdout and stderr.
    async fn output_tail(&self, id: &str) -> String {
        let mut output = String::new();
        let opts = LogsOptionsBuilder::new().stdout(true).stderr(true).build();
        let mut logs = self.docker().logs(id, Some(opts));
        while let Some(Ok(chunk)) = logs.next().await {
            output.push_str(&chunk.to_string());
            keep_tail(&mut output);
        }
        let mut cut = output.len().saturating_sub(MAX_OUTPUT);
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        output.drain(..cut);
        output
    }

    /// Removes the unit's leftover one-offs, but for a started one of the same work (image,
    /// command and volumes), which is returned, adopted. One of other work that still runs
    /// refuses the new one.
    fn sweep_leftovers(&self, spec: &OneOff, key: &str) -> Result<Option<Prepared>, PodmanError> {
        let Some(source) = spec.labels.get(SOURCE_LABEL) else {
            return Ok(None);
        };
        let listed = self.list_labelled(vec![format!("{SOURCE_LABEL}={source}")])?;
        let Sweep {
            adopt,
            adopted_exit,
            remove,
            still_running,
        } = sweep(listed, key);
        if let Some(container) = still_running.into_iter().next() {
            return Err(PodmanError::LeftoverRunning {
                container,
                label: source.clone(),
            });
        }
        for id in remove {
            let rm = RemoveContainerOptionsBuilder::new().force(true).build();
            self.block_on(self.docker().remove_container(&id, Some(rm)))
                .map_err(Self::api_err("container remove"))?;
        }
        Ok(adopt.map(|id| Prepared {
            id,
            adopted: true,
            recorded_exit: adopted_exit,
        }))
    }
}

/// The exit code a wait answered, or why it has none. podman answers a wait on a container
/// whose conmon died before it recorded the exit with status 0 and an error ("getting exit code
/// ... from DB: no such exit code"): that 0 is no exit code, and the work may have stopped
/// halfway.
fn exit_code(r: &bollard::models::ContainerWaitResponse) -> Result<i64, String> {
    match r.error.as_ref().and_then(|e| e.message.as_deref()) {
        Some(message) if !message.is_empty() => Err(message.to_string()),
        _ => Ok(r.status_code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_answered_with_an_error_gives_no_exit_code() {
        use bollard::models::{ContainerWaitExitError, ContainerWaitResponse};
        let answer = |status_code, message: Option<&str>| ContainerWaitResponse {
            status_code,
            error: message.map(|m| ContainerWaitExitError {
                message: Some(m.to_string()),
            }),
        };
        let lost = "getting exit code of container 39a2 from DB: no such exit code";
        assert_eq!(exit_code(&answer(0, Some(lost))), Err(lost.to_string()));
        assert_eq!(exit_code(&answer(0, None)), Ok(0));
        assert_eq!(exit_code(&answer(3, Some(""))), Ok(3));
    }

    #[test]
    fn volumes_podman_relabels_or_chowns_are_told_from_the_rest() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        for changing in [
            &["data:/data:Z"][..],
            &["data:/data:ro,z"],
            &["a:/a", "b:/b:U"],
        ] {
            assert!(changes_its_volumes(&v(changing)), "{changing:?}");
        }
        for plain in [&["data:/data"][..], &["data:/data:ro"], &["/srv/z:/z"], &[]] {
            assert!(!changes_its_volumes(&v(plain)), "{plain:?}");
        }
    }

    #[test]
    fn the_output_keeps_its_tail_within_the_bound() {
        let mut out = "é".repeat(MAX_OUTPUT * 2);
        keep_tail(&mut out);
        assert!(out.len() <= MAX_OUTPUT + 1, "{}", out.len());
        assert!(out.ends_with('é'));
    }
}
