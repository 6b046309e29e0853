//! One-off containers (migrations, their checks and backups), in three phases so that a caller
//! can keep the slow parts out of a service's downtime:
//!
//! 1. `prepare`: sweep the unit's leftovers, then create the container and initialize it (the
//!    OCI runtime's create: conmon, namespaces, mounts), or adopt a leftover; it needs nothing
//!    stopped, so a migration prepares before it stops its services, and what is left to do
//!    while they are down is to start its process.
//! 2. `run`: start it (unless adopted) and wait with the deadline; on timeout kill it. Its
//!    output (its tail, bounded) is asked for apart, so that a migration starts its services
//!    again before it reads the log.
//! 3. `remove`: remove it, on success, failure and timeout alike; a migration removes it only
//!    after its services started again.
//!
//! `Podman::run_oneoff` composes the three; `Guard` removes a prepared container on every path.
//!
//! A run killed while its one-off ran leaves the container behind, still migrating. The next
//! run of the same command on the same image adopts it: waits for it and takes its exit as the
//! result, so a migration never runs twice side by side, nor twice in a row. Only a leftover
//! that was started is adopted: one a run left between its create and its start never runs
//! unless started, and waiting on it would only end at the deadline; nor is one that a signal
//! ended (a power-off stopped it), whose exit is not the migration's, nor one whose exit podman
//! never recorded (the power went before conmon could). It is removed, as is any other
//! leftover of the unit, before a new one is created.

use super::api::PodmanApi;
use super::leftovers::{KEY_LABEL, Sweep, sweep};
use super::wire;
use super::{Podman, PodmanError};
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
/// How much of a one-off's output is kept: its tail.
const MAX_OUTPUT: usize = 64 * 1024;
/// The bound of an init: the OCI runtime's create, a fraction of a second on a loaded host.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);

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

/// How a prepared one-off's run ended; its output is `Podman::oneoff_output`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited {
        rc: i64,
    },
    /// Killed at the deadline.
    TimedOut,
}

/// A one-off container ready to run: created by this run, or a killed run's, adopted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: String,
    /// A started leftover of the same work: it is waited for, never started again.
    pub adopted: bool,
}

/// A prepared one-off that is removed when dropped, so that no early return, error or panic
/// between its prepare and its removal leaves the container behind. `remove` removes it at the
/// point the caller chooses, and reports how that went.
pub struct Guard<'a, P: Podman + ?Sized> {
    podman: &'a P,
    prepared: Prepared,
    removed: bool,
}

impl<'a, P: Podman + ?Sized> Guard<'a, P> {
    pub fn new(podman: &'a P, prepared: Prepared) -> Self {
        Guard {
            podman,
            prepared,
            removed: false,
        }
    }

    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    pub fn remove(mut self) -> Result<(), PodmanError> {
        self.removed = true;
        self.podman.remove_oneoff(&self.prepared)
    }
}

impl<P: Podman + ?Sized> Drop for Guard<'_, P> {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // Only reached on a path that already fails: its error is the one to report.
        if let Err(e) = self.podman.remove_oneoff(&self.prepared) {
            tracing::warn!(container = %self.prepared.id, error = %e, "one-off not removed");
        }
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
        if let Some(id) = self.sweep_leftovers(spec, &key)? {
            return Ok(Prepared { id, adopted: true });
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
        let (status, body) = wire::request(
            self.socket(),
            "container init",
            "POST",
            &path,
            b"",
            INIT_TIMEOUT,
        )?;
        match status {
            // 304: initialized already.
            200..=299 | 304 => Ok(()),
            _ => Err(PodmanError::Api {
                call: "container init".into(),
                detail: format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim()),
            }),
        }
    }

    pub(super) fn run_prepared_impl(
        &self,
        prepared: &Prepared,
        timeout: Duration,
    ) -> Result<Ended, PodmanError> {
        let (docker, id) = (self.docker(), prepared.id.as_str());
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
            Some(Ok(r)) => Ok(r.status_code),
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

    /// Removes the unit's leftover one-offs, but for a started one of the same work (image and
    /// command), which is returned to be adopted.
    fn sweep_leftovers(&self, spec: &OneOff, key: &str) -> Result<Option<String>, PodmanError> {
        let Some(source) = spec.labels.get(SOURCE_LABEL) else {
            return Ok(None);
        };
        let listed = self.list_labelled(vec![format!("{SOURCE_LABEL}={source}")])?;
        let Sweep { adopt, remove } = sweep(listed, key);
        for id in remove {
            let rm = RemoveContainerOptionsBuilder::new().force(true).build();
            self.block_on(self.docker().remove_container(&id, Some(rm)))
                .map_err(Self::api_err("container remove"))?;
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
