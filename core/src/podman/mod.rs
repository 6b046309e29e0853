//! podman access: the API over the podman socket. One trait, `Podman`,
//! so plans and waits can be tested without a host; `PodmanApi` speaks to the real socket.

mod api;
mod container_look;
mod health_api;
pub mod health_probe;
mod images;
mod known_images;
mod leftovers;
mod named;
mod networks;
pub mod oneoff;
mod oneoff_api;
mod pull;
pub mod record;
pub mod secrets;
mod status;
mod volumes;
mod wire;

pub use crate::reference::ImageRef;
pub use api::PodmanApi;
pub use health_probe::{HealthProbe, HealthProbes};
pub use images::{ImageStore, LocalImage};
pub use known_images::Inspected;
pub use oneoff::{Ended, Finished, Guard, OneOff, OneOffResult, Prepared};
pub use secrets::SecretInfo;
pub use status::{ContainerState, Health};

/// The label quadlet puts on every container it starts: the unit that owns it.
pub const UNIT_LABEL: &str = "PODMAN_SYSTEMD_UNIT";

/// The default podman API socket of a rootful host.
pub const DEFAULT_SOCKET: &str = "/run/podman/podman.sock";

#[derive(Debug, thiserror::Error)]
pub enum PodmanError {
    #[error(
        "the podman API at {socket} is unreachable: {detail}; start it with `systemctl enable --now podman.socket`, or set podman_socket"
    )]
    Unreachable { socket: String, detail: String },
    #[error(
        "pulling {image} failed: {detail}; check the registry is reachable and the reference is right, or use pull: never with a local image"
    )]
    Pull { image: String, detail: String },
    #[error("podman API call `{call}` failed: {detail}")]
    Api { call: String, detail: String },
    #[error(
        "podman cannot tell how the one-off container {container} ended ({detail}): its conmon was gone before it recorded the exit, so its work may have stopped halfway and refit takes it as not done; run again, and the next run removes the container and does the work anew"
    )]
    ExitUnknown { container: String, detail: String },
    #[error(
        "container {container} ({label}'s one-off, left by a run that was killed) still runs its work, and refit does not stop it halfway; wait until it ends (`podman wait {container}`), then run again"
    )]
    LeftoverRunning { container: String, label: String },
}

/// A container as refit needs to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    pub id: String,
    /// The image ID it runs, without the `sha256:` prefix.
    pub image_id: String,
    /// Its `io.refit.revision` label.
    pub revision: Option<String>,
    /// The unit quadlet started it for (`PODMAN_SYSTEMD_UNIT`).
    pub unit: String,
    pub state: ContainerState,
    /// None when it has no health check, or is not running.
    pub health: Option<Health>,
    /// When it started, in seconds since the epoch; 0 when podman did not say. A container
    /// started after its unit file last changed was created from that file's text.
    pub started_at: i64,
}

impl ContainerInfo {
    pub fn running(&self) -> bool {
        self.state.is_running()
    }
}

pub trait Podman: Sync + ImageStore + HealthProbes {
    fn ping(&self) -> Result<(), PodmanError>;
    /// The local image ID a reference resolves to now, or None when it is not local.
    fn image_id(&self, image: &str) -> Result<Option<String>, PodmanError>;
    /// The `REPO@sha256:…` digests podman recorded for the local image of a reference.
    fn repo_digests(&self, image: &str) -> Result<Vec<String>, PodmanError>;
    /// Asks about these references at once, so that `image_id` and `repo_digests` of them
    /// answer without a call of their own until the image store changes. A failure is left
    /// to those later asks, which report it; this asks each in turn.
    fn look_at_images(&self, images: &[String]) {
        for image in images {
            let _ = self.image_id(image);
        }
    }
    /// Pulls a reference, draining the progress stream, and returns its new local ID.
    fn pull(&self, image: &str) -> Result<String, PodmanError>;
    /// Loads a `podman save` archive (docker-archive, `-m` for several images) from a file on
    /// this host, and returns the references it loaded.
    fn load_archive(&self, path: &std::path::Path) -> Result<Vec<String>, PodmanError>;
    /// Points `target` (REPO:TAG) at an image ID.
    fn tag(&self, image_id: &str, target: &str) -> Result<(), PodmanError>;
    /// Makes a one-off ready without running it: removes the unit's leftover one-offs, then
    /// creates the container, or adopts a started leftover of the same work. It needs nothing
    /// stopped, so a migration prepares while its services still serve.
    fn prepare_oneoff(&self, spec: &OneOff) -> Result<Prepared, PodmanError>;
    /// Runs a prepared one-off to its end or the deadline (then kills it); the container stays
    /// until `remove_oneoff`.
    fn run_prepared(
        &self,
        prepared: &Prepared,
        timeout: std::time::Duration,
    ) -> Result<Ended, PodmanError>;
    /// The tail of a run one-off's output (stdout and stderr as it wrote them), or what of it
    /// could be read: it only ever illustrates an exit already known.
    fn oneoff_output(&self, prepared: &Prepared) -> String;
    /// Removes a prepared one-off's container, whatever its state.
    fn remove_oneoff(&self, prepared: &Prepared) -> Result<(), PodmanError>;
    /// Runs a one-off container to its end or the deadline, and removes it either way: its
    /// prepare, run and removal in one, for a caller with nothing to do in between.
    fn run_oneoff(
        &self,
        spec: &OneOff,
        timeout: std::time::Duration,
    ) -> Result<Finished, PodmanError> {
        let held = Guard::new(self, self.prepare_oneoff(spec)?);
        let finished = self.run_prepared(held.prepared(), timeout).map(|ended| {
            let output = self.oneoff_output(held.prepared());
            match ended {
                Ended::Exited { rc } => Finished::Exited(OneOffResult {
                    rc,
                    output,
                    adopted: held.prepared().adopted,
                }),
                Ended::TimedOut => Finished::TimedOut { output },
            }
        });
        let removed = held.remove();
        let finished = finished?;
        removed?;
        Ok(finished)
    }
    /// Every container quadlet started for the units `selection` names, running or not, with
    /// their health: one list call, however many services and templates it names.
    fn containers_of(
        &self,
        selection: &UnitSelection<'_>,
    ) -> Result<Vec<ContainerInfo>, PodmanError>;
    /// Every podman secret, with the unit refit created it for.
    fn secrets(&self) -> Result<Vec<SecretInfo>, PodmanError>;
    /// Creates a secret holding `value` for `unit`; an existing name is left as it is.
    fn create_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError>;
    /// A secret's value, or None when it does not exist.
    fn secret_value(&self, name: &str) -> Result<Option<String>, PodmanError>;
    /// Creates the copy of another tool's secret refit keeps for `unit` (`kept_inputs`); an
    /// existing name is left as it is.
    fn keep_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError>;
    /// Sets secret `name` to `value`, replacing the value it holds.
    fn replace_secret(&self, name: &str, value: &str) -> Result<(), PodmanError>;
    fn remove_secret(&self, name: &str) -> Result<(), PodmanError>;
    /// Removes a volume; one that is gone already is not an error.
    fn remove_volume(&self, name: &str) -> Result<(), PodmanError>;
    /// Whether podman has the volume `name`.
    fn volume_exists(&self, name: &str) -> Result<bool, PodmanError>;
    /// Whether podman has the network `name`.
    fn network_exists(&self, name: &str) -> Result<bool, PodmanError>;
    /// Removes a network, never by force; one that is gone already is not an error.
    fn remove_network(&self, name: &str) -> Result<(), PodmanError>;
    /// Starts one look at the unit containers: the next `containers_of` lists them, and later
    /// ones answer from that list until `forget_containers`. For a call's first look at the
    /// host, which its health check and its plan both read (`Remembered` pairs it with its
    /// look at systemd).
    fn remember_containers(&self) {}
    /// Ends the look: every later `containers_of` lists again.
    fn forget_containers(&self) {}
    /// What this call's podman answered, while its look at the containers holds: the record
    /// a call with nothing to do leaves for the next (`record`).
    fn answers(&self) -> Option<record::Answers> {
        None
    }
    /// Takes an earlier call's answers (`record`) as podman's, for an armed look: the images
    /// and containers asked after answer from them until forgotten.
    fn adopt(&self, _answers: record::Answers) {}
    /// Every container quadlet started for these units.
    fn unit_containers(&self, units: &[String]) -> Result<Vec<ContainerInfo>, PodmanError> {
        self.containers_of(&UnitSelection {
            services: units,
            templates: &[],
        })
    }
}

/// Which units' containers to look at: these services, and every instance of these templates
/// (stems such as `worker@`).
#[derive(Debug, Clone, Copy)]
pub struct UnitSelection<'a> {
    pub services: &'a [String],
    pub templates: &'a [&'a str],
}

impl UnitSelection<'_> {
    pub fn is_empty(&self) -> bool {
        self.services.is_empty() && self.templates.is_empty()
    }

    pub fn matches(&self, unit: &str) -> bool {
        self.services.iter().any(|s| s == unit)
            || self.templates.iter().any(|t| is_instance_of(unit, t))
    }
}

/// Makes `reference` (REPO:TAG) name the image `id`, unless it does already; true when it
/// moved. An install of a held image (`state::Held`) is this.
pub fn point_tag(podman: &dyn Podman, reference: &str, id: &str) -> Result<bool, PodmanError> {
    if podman.image_id(reference)?.as_deref() == Some(id) {
        return Ok(false);
    }
    podman.tag(id, reference)?;
    Ok(true)
}

/// Strips the `sha256:` prefix, so IDs from different API calls compare.
pub fn bare_id(id: &str) -> String {
    id.strip_prefix("sha256:").unwrap_or(id).to_string()
}

/// True when `unit` is an instance service of the template `stem`: `worker@3.service` of `worker@`.
pub fn is_instance_of(unit: &str, stem: &str) -> bool {
    unit.strip_prefix(stem)
        .and_then(|rest| rest.strip_suffix(".service"))
        .is_some_and(|instance| !instance.is_empty())
}
