//! `Podman` over the podman API socket, through bollard's Docker-compatible client.

use super::container_look::ContainerLook;
use super::known_images::{Inspected, KnownImages};
use super::oneoff::{Ended, OneOff, Prepared};
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

pub struct PodmanApi {
    docker: Docker,
    socket: String,
    rt: tokio::runtime::Runtime,
    /// The bound of a whole pull: a registry that stops answering mid-pull must not hold a
    /// run for longer.
    pull_timeout: Duration,
    /// podman's `X-Registry-Auth` for pulls, from an explicit `auth_file`; a secret.
    registry_auth: Option<String>,
    /// Image inspects answered in this call, until it changes the image store.
    known: KnownImages,
    /// The unit containers, while a look at them is held.
    look: ContainerLook,
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
            known: KnownImages::default(),
            look: ContainerLook::default(),
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
        Ok(self.inspect_image(image)?.map(|i| i.id))
    }

    fn repo_digests(&self, image: &str) -> Result<Vec<String>, PodmanError> {
        Ok(self
            .inspect_image(image)?
            .map(|i| i.repo_digests)
            .unwrap_or_default())
    }

    /// One image list instead of an inspect each: podman answers inspects one after another
    /// (8 ms each on the testbed), a list of every image in one go.
    fn look_at_images(&self, images: &[String]) {
        if self.known.knows_all(images) {
            return;
        }
        let _ = self.known.fill(|| {
            let mut tags = self.every_tag()?;
            tags.retain(|tag, _| images.contains(tag));
            Ok::<_, PodmanError>(tags)
        });
    }

    fn pull(&self, image: &str) -> Result<String, PodmanError> {
        let auth = self.registry_auth.as_deref();
        self.changing_images(|| super::pull::pull(&self.socket, image, auth, self.pull_timeout))
            .map(|id| bare_id(&id))
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
        self.changing_images(|| {
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
        })
    }

    fn tag(&self, image_id: &str, target: &str) -> Result<(), PodmanError> {
        // A digest-pinned reference names its image already: there is nothing to point.
        let Some(crate::reference::RepoTag { repo, tag }) = crate::reference::repo_and_tag(target)
        else {
            return Ok(());
        };
        let opts = TagImageOptionsBuilder::new().repo(repo).tag(tag).build();
        self.changing_images(|| {
            self.rt
                .block_on(self.docker.tag_image(image_id, Some(opts)))
        })
        .map_err(Self::api_err("image tag"))
    }

    fn prepare_oneoff(&self, spec: &OneOff) -> Result<Prepared, PodmanError> {
        self.prepare_oneoff_impl(spec)
    }

    fn run_prepared(&self, prepared: &Prepared, timeout: Duration) -> Result<Ended, PodmanError> {
        self.run_prepared_impl(prepared, timeout)
    }

    fn oneoff_output(&self, prepared: &Prepared) -> String {
        self.oneoff_output_impl(prepared)
    }

    fn remove_oneoff(&self, prepared: &Prepared) -> Result<(), PodmanError> {
        self.remove_oneoff_impl(prepared)
    }

    fn secrets(&self) -> Result<Vec<super::SecretInfo>, PodmanError> {
        super::secrets::list(&self.socket)
    }

    fn create_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError> {
        let label = super::secrets::SECRET_UNIT_LABEL;
        super::secrets::create(&self.socket, name, label, unit, value)
    }

    fn secret_value(&self, name: &str) -> Result<Option<String>, PodmanError> {
        super::secrets::reveal(&self.socket, name)
    }

    fn keep_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError> {
        let label = super::secrets::KEPT_UNIT_LABEL;
        super::secrets::create(&self.socket, name, label, unit, value)
    }

    fn replace_secret(&self, name: &str, value: &str) -> Result<(), PodmanError> {
        super::secrets::replace(&self.socket, name, value)
    }

    fn remove_secret(&self, name: &str) -> Result<(), PodmanError> {
        super::secrets::remove(&self.socket, name)
    }

    fn remove_volume(&self, name: &str) -> Result<(), PodmanError> {
        super::volumes::remove(&self.socket, name)
    }
    fn volume_exists(&self, name: &str) -> Result<bool, PodmanError> {
        super::volumes::exists(&self.socket, name)
    }
    fn network_exists(&self, name: &str) -> Result<bool, PodmanError> {
        super::networks::exists(&self.socket, name)
    }
    fn remove_network(&self, name: &str) -> Result<(), PodmanError> {
        super::networks::remove(&self.socket, name)
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
        let every = self
            .look
            .get_or(|| self.list_unit_containers(vec![UNIT_LABEL.to_string()], |_| true))?;
        Ok(every
            .into_iter()
            .filter(|c| selection.matches(&c.unit))
            .collect())
    }

    fn remember_containers(&self) {
        self.look.arm();
    }

    fn forget_containers(&self) {
        self.look.forget();
    }

    fn answers(&self) -> Option<super::record::Answers> {
        Some(super::record::Answers {
            containers: self.look.seen()?,
            images: self.known.answers(),
        })
    }

    fn adopt(&self, answers: super::record::Answers) {
        self.look.adopt(answers.containers);
        self.known.adopt(answers.images);
    }
}

/// Seconds a container list may take: observation must never hang a run.
const OBSERVE_TIMEOUT: Duration = Duration::from_secs(30);

/// The fields of libpod's container list refit reads; every one tolerant of podman's values.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Listed {
    pub(super) id: String,
    #[serde(rename = "ImageID", default)]
    image_id: String,
    /// `created`, `running`, `exited`, ...: the one-off sweep adopts only a started leftover.
    #[serde(default)]
    pub(super) state: String,
    /// The health check's status (`healthy`, `starting`...), empty without a check: libpod's
    /// list carries it, so no container needs an inspect of its own.
    #[serde(default)]
    status: String,
    #[serde(default)]
    pub(super) labels: Option<HashMap<String, String>>,
    /// The exit code of an exited container (0 while it runs).
    #[serde(default)]
    pub(super) exit_code: i64,
    /// True once podman recorded the container's exit, so `exit_code` is its answer. A container
    /// running when the host lost power is listed after the boot as exited, code 0, with this
    /// false: conmon died before it could record the exit.
    #[serde(default)]
    pub(super) exited: bool,
    #[serde(default)]
    started_at: i64,
}

impl Listed {
    /// The container as refit sees it, when its unit label is one `keep` accepts.
    fn into_info(self, keep: impl Fn(&str) -> bool) -> Option<ContainerInfo> {
        let mut labels = self.labels.unwrap_or_default();
        let unit = labels.remove(UNIT_LABEL).filter(|u| keep(u))?;
        let state = ContainerState::parse(&self.state);
        // A stopped container keeps its last check's status, which says nothing now.
        let health = if state.is_running() {
            Health::parse(&self.status)
        } else {
            None
        };
        Some(ContainerInfo {
            image_id: bare_id(&self.image_id),
            revision: labels.remove(crate::unit::REVISION_LABEL),
            unit,
            state,
            health,
            id: self.id,
            started_at: self.started_at,
        })
    }
}

impl PodmanApi {
    /// Containers matching the label filters whose unit label `keep` accepts, with health.
    fn list_unit_containers(
        &self,
        labels: Vec<String>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<ContainerInfo>, PodmanError> {
        Ok(self
            .list_labelled(labels)?
            .into_iter()
            .filter_map(|c| c.into_info(&keep))
            .collect())
    }

    /// Every container, running or not, matching all the label filters: one bounded list call.
    pub(super) fn list_labelled(&self, labels: Vec<String>) -> Result<Vec<Listed>, PodmanError> {
        let filters = serde_json::json!({ "label": labels }).to_string();
        let path = format!(
            "/v4.0.0/libpod/containers/json?all=true&filters={}",
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

    /// The image `image` names, asked of podman once per call until the store changes.
    fn inspect_image(&self, image: &str) -> Result<Option<Inspected>, PodmanError> {
        self.known.get_or(image, || {
            match self.rt.block_on(self.docker.inspect_image(image)) {
                Ok(i) => Ok(i.id.as_deref().map(|id| Inspected {
                    id: bare_id(id),
                    repo_digests: i.repo_digests.clone().unwrap_or_default(),
                })),
                Err(e) if is_not_found(&e) => Ok(None),
                Err(e) => Err(Self::api_err("image inspect")(e)),
            }
        })
    }

    /// `change` to the image store: what this call inspected may not hold after it.
    pub(super) fn changing_images<T>(&self, change: impl FnOnce() -> T) -> T {
        self.known.changing(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(state: &str, status: &str) -> Listed {
        serde_json::from_value(serde_json::json!({
            "Id": "c1", "ImageID": "0a1b", "State": state, "Status": status,
            "Labels": {UNIT_LABEL: "api.service", crate::unit::REVISION_LABEL: "r1"},
        }))
        .expect("a libpod list entry")
    }

    #[test]
    fn health_comes_from_the_list_and_only_for_a_running_container() {
        let c = listed("running", "unhealthy")
            .into_info(|_| true)
            .expect("kept");
        assert_eq!(c.health, Some(Health::Unhealthy));
        assert_eq!(
            (c.unit.as_str(), c.revision.as_deref()),
            ("api.service", Some("r1"))
        );
        assert_eq!(c.image_id, "0a1b");
        let no_check = listed("running", "").into_info(|_| true).expect("kept");
        assert_eq!(no_check.health, None);
        let stopped = listed("exited", "healthy")
            .into_info(|_| true)
            .expect("kept");
        assert_eq!(stopped.health, None);
    }

    #[test]
    fn a_container_of_another_unit_is_left_out() {
        assert!(
            listed("running", "healthy")
                .into_info(|u| u == "db.service")
                .is_none()
        );
    }
}
