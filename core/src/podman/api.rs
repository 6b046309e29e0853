//! `Podman` over the podman API socket, through bollard's Docker-compatible client.

use super::oneoff::{Finished, OneOff, Prepared};
use super::{
    ContainerInfo, ContainerState, Health, Podman, PodmanError, UNIT_LABEL, UnitSelection, bare_id,
    wire,
};
use bollard::Docker;
use bollard::query_parameters::TagImageOptionsBuilder;
use futures_util::StreamExt;
use serde::Deserialize;
use std::collections::HashMap;
use std::time::Duration;

/// The compat API version refit's own reads ask for (podman serves 1.40 and later).
const API_VERSION: &str = "v1.41";

pub struct PodmanApi {
    docker: Docker,
    socket: String,
    rt: tokio::runtime::Runtime,
    /// The bound of a whole pull: a registry that stops answering mid-pull must not hold a
    /// run for longer.
    pull_timeout: Duration,
    /// podman's `X-Registry-Auth` for pulls, from an explicit `auth_file`; a secret.
    registry_auth: Option<String>,
}

/// Seconds any single API request may take before it is given up; pulls drain a stream and
/// are bounded by the same figure per request.
const REQUEST_TIMEOUT_SECS: u64 = 600;

impl PodmanApi {
    pub fn connect(socket: &str) -> Result<Self, PodmanError> {
        let unreachable = |detail: String| PodmanError::Unreachable {
            socket: socket.to_string(),
            detail,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| unreachable(e.to_string()))?;
        let docker =
            Docker::connect_with_unix(socket, REQUEST_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION)
                .map_err(|e| unreachable(e.to_string()))?;
        Ok(PodmanApi {
            docker,
            socket: socket.to_string(),
            rt,
            pull_timeout: Duration::from_secs(REQUEST_TIMEOUT_SECS),
            registry_auth: None,
        })
    }

    /// Bounds each pull, stream and all, by `timeout`.
    pub fn with_pull_timeout(mut self, timeout: Duration) -> Self {
        self.pull_timeout = timeout;
        self
    }

    /// Pulls send these logins (`X-Registry-Auth`, several registries at once) instead of
    /// leaving podman to its own auth files.
    pub fn with_registry_auth(mut self, header: Option<String>) -> Self {
        self.registry_auth = header;
        self
    }

    pub(super) fn api_err(call: &str) -> impl Fn(bollard::errors::Error) -> PodmanError + '_ {
        move |e| PodmanError::Api {
            call: call.to_string(),
            detail: e.to_string(),
        }
    }
}

fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

impl Podman for PodmanApi {
    fn ping(&self) -> Result<(), PodmanError> {
        self.rt
            .block_on(self.docker.ping())
            .map(drop)
            .map_err(|e| PodmanError::Unreachable {
                socket: self.socket.clone(),
                detail: e.to_string(),
            })
    }

    fn image_id(&self, image: &str) -> Result<Option<String>, PodmanError> {
        match self.rt.block_on(self.docker.inspect_image(image)) {
            Ok(i) => Ok(i.id.as_deref().map(bare_id)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(Self::api_err("image inspect")(e)),
        }
    }

    fn repo_digests(&self, image: &str) -> Result<Vec<String>, PodmanError> {
        match self.rt.block_on(self.docker.inspect_image(image)) {
            Ok(i) => Ok(i.repo_digests.unwrap_or_default()),
            Err(e) if is_not_found(&e) => Ok(Vec::new()),
            Err(e) => Err(Self::api_err("image inspect")(e)),
        }
    }

    fn pull(&self, image: &str) -> Result<String, PodmanError> {
        let auth = self.registry_auth.as_deref();
        super::pull::pull(&self.socket, image, auth, self.pull_timeout).map(|id| bare_id(&id))
    }

    fn load_archive(&self, path: &std::path::Path) -> Result<Vec<String>, PodmanError> {
        let err = |detail: String| PodmanError::Api {
            call: format!("image load {}", path.display()),
            detail,
        };
        let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
        // Streamed in chunks: an archive of a whole stack does not fit in memory comfortably.
        let chunks = futures_util::stream::unfold(file, |mut f| async move {
            let mut buf = vec![0u8; 1 << 20];
            match std::io::Read::read(&mut f, &mut buf) {
                Ok(0) | Err(_) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((bytes::Bytes::from(buf), f))
                }
            }
        });
        let opts = bollard::query_parameters::ImportImageOptionsBuilder::new()
            .quiet(true)
            .build();
        self.rt.block_on(async {
            let mut stream = self
                .docker
                .import_image(opts, bollard::body_stream(chunks), None);
            let mut loaded = Vec::new();
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| err(e.to_string()))?;
                if let Some(e) = info.error_detail.and_then(|d| d.message) {
                    return Err(err(e));
                }
                if let Some(s) = info.stream {
                    loaded.extend(s.lines().filter_map(|l| {
                        l.trim().strip_prefix("Loaded image: ").map(str::to_string)
                    }));
                }
            }
            Ok(loaded)
        })
    }

    fn tag(&self, image_id: &str, target: &str) -> Result<(), PodmanError> {
        // A digest-pinned reference names its image already: there is nothing to point.
        let Some((repo, tag)) = crate::reference::repo_and_tag(target) else {
            return Ok(());
        };
        let opts = TagImageOptionsBuilder::new().repo(repo).tag(tag).build();
        self.rt
            .block_on(self.docker.tag_image(image_id, Some(opts)))
            .map_err(Self::api_err("image tag"))
    }

    fn prepare_oneoff(&self, spec: &OneOff) -> Result<Prepared, PodmanError> {
        self.prepare_oneoff_impl(spec)
    }

    fn run_prepared(
        &self,
        prepared: &Prepared,
        timeout: Duration,
    ) -> Result<Finished, PodmanError> {
        self.run_prepared_impl(prepared, timeout)
    }

    fn remove_oneoff(&self, prepared: &Prepared) -> Result<(), PodmanError> {
        self.remove_oneoff_impl(prepared)
    }

    fn secrets(&self) -> Result<Vec<super::SecretInfo>, PodmanError> {
        super::secrets::list(&self.socket)
    }

    fn create_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError> {
        super::secrets::create(&self.socket, name, unit, value)
    }

    fn secret_value(&self, name: &str) -> Result<Option<String>, PodmanError> {
        super::secrets::reveal(&self.socket, name)
    }

    fn remove_secret(&self, name: &str) -> Result<(), PodmanError> {
        super::secrets::remove(&self.socket, name)
    }

    fn containers_of(
        &self,
        selection: &UnitSelection<'_>,
    ) -> Result<Vec<ContainerInfo>, PodmanError> {
        if selection.is_empty() {
            return Ok(Vec::new());
        }
        // One list call for all units. podman 5 ANDs repeated label filters, so a filter per
        // unit would match nothing for two or more: filter on the key, and pick here.
        self.list_unit_containers(vec![UNIT_LABEL.to_string()], |u| selection.matches(u))
    }
}

/// Seconds a container list or inspect may take: observation must never hang a run.
const OBSERVE_TIMEOUT: Duration = Duration::from_secs(30);

/// The fields of the compat container list refit reads; every one tolerant of podman's values.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Listed {
    pub(super) id: String,
    #[serde(rename = "ImageID", default)]
    image_id: String,
    /// `created`, `running`, `exited`, ...: the one-off sweep adopts only a started leftover.
    #[serde(default)]
    pub(super) state: String,
    #[serde(default)]
    pub(super) labels: Option<HashMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct Inspected {
    #[serde(default)]
    state: Option<InspectedState>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct InspectedState {
    #[serde(default)]
    health: Option<InspectedHealth>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct InspectedHealth {
    #[serde(default)]
    status: String,
}

impl PodmanApi {
    /// Containers matching the label filters whose unit label `keep` accepts, with health.
    fn list_unit_containers(
        &self,
        labels: Vec<String>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<ContainerInfo>, PodmanError> {
        let list = self.list_labelled(labels)?;
        let mut out = Vec::with_capacity(list.len());
        for c in list {
            let labels = c.labels.unwrap_or_default();
            let Some(unit) = labels.get(UNIT_LABEL).filter(|u| keep(u)) else {
                continue;
            };
            let state = ContainerState::parse(&c.state);
            // Health lives only in the inspect result; ask only where it matters.
            let health = if state.is_running() {
                self.health(&c.id)?
            } else {
                None
            };
            out.push(ContainerInfo {
                image_id: bare_id(&c.image_id),
                revision: labels.get(crate::unit::REVISION_LABEL).cloned(),
                unit: unit.clone(),
                state,
                health,
                id: c.id,
            });
        }
        Ok(out)
    }

    /// Every container, running or not, matching all the label filters: one bounded list call.
    pub(super) fn list_labelled(&self, labels: Vec<String>) -> Result<Vec<Listed>, PodmanError> {
        let filters = serde_json::json!({ "label": labels }).to_string();
        let path = format!(
            "/{API_VERSION}/containers/json?all=true&filters={}",
            wire::encode(&filters)
        );
        Ok(
            wire::get_json(&self.socket, "container list", &path, OBSERVE_TIMEOUT)?
                .unwrap_or_default(),
        )
    }

    pub(super) fn socket(&self) -> &str {
        &self.socket
    }

    pub(super) fn docker(&self) -> &Docker {
        &self.docker
    }

    pub(super) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    fn health(&self, id: &str) -> Result<Option<Health>, PodmanError> {
        let path = format!("/{API_VERSION}/containers/{}/json", wire::encode(id));
        // Gone between the list and the inspect (None): it is not running, so it has no health.
        let inspected: Option<Inspected> =
            wire::get_json(&self.socket, "container inspect", &path, OBSERVE_TIMEOUT)?;
        Ok(inspected
            .and_then(|i| i.state)
            .and_then(|s| s.health)
            .and_then(|h| Health::parse(&h.status)))
    }
}
