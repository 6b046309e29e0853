//! Local images as refit's retention needs them: which tags an image has and its size, which
//! images containers use, and untagging and removing. Through the libpod API (`wire`): the
//! compat API has no untag, and its image removal by name untags or removes depending on how
//! many names the image has.

use super::known_images::Inspected;
use super::{PodmanApi, PodmanError, bare_id, wire};
use serde::Deserialize;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// Seconds an image call may take; removing one deletes its layers.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A local image: its ID (no `sha256:`), every `REPO:TAG` naming it, and its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalImage {
    pub id: String,
    pub tags: Vec<String>,
    pub size: u64,
}

/// What retention asks of podman; a supertrait of `Podman`, so every podman has it.
pub trait ImageStore {
    /// The image with this ID, or None when it is not local.
    fn local_image(&self, id: &str) -> Result<Option<LocalImage>, PodmanError>;
    /// Every local image with a tag in `repo` (a repository, no tag).
    fn images_in(&self, repo: &str) -> Result<Vec<LocalImage>, PodmanError>;
    /// The image IDs every container uses, running or not, whoever made it.
    fn images_in_use(&self) -> Result<BTreeSet<String>, PodmanError>;
    /// Takes `tag` (REPO:TAG) off the image; the image stays.
    fn untag(&self, id: &str, tag: &str) -> Result<(), PodmanError>;
    /// Removes an image that has no tag left and no container, never forcing: false when
    /// podman refuses (a container took it meanwhile, or it has a name again).
    fn remove_image(&self, id: &str) -> Result<bool, PodmanError>;
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Summary {
    id: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    #[serde(default)]
    repo_digests: Option<Vec<String>>,
    #[serde(default)]
    size: u64,
}

impl From<Summary> for LocalImage {
    fn from(s: Summary) -> Self {
        LocalImage {
            id: bare_id(&s.id),
            // An untagged image lists `<none>:<none>`, which names nothing.
            tags: s
                .repo_tags
                .unwrap_or_default()
                .into_iter()
                .filter(|t| !t.starts_with("<none>"))
                .collect(),
            size: s.size,
        }
    }
}

#[derive(Deserialize)]
struct Container {
    #[serde(rename = "ImageID", default)]
    image_id: String,
}

impl PodmanApi {
    /// Every tag of every local image, with what an inspect of it would say: one list call.
    pub(super) fn every_tag(&self) -> Result<HashMap<String, Inspected>, PodmanError> {
        let got: Option<Vec<Summary>> = wire::get_json(
            self.socket(),
            "image list",
            "/v4.0.0/libpod/images/json",
            TIMEOUT,
        )?;
        let mut tags = HashMap::new();
        for image in got.unwrap_or_default() {
            let inspected = Inspected {
                id: bare_id(&image.id),
                repo_digests: image.repo_digests.unwrap_or_default(),
            };
            for tag in image.repo_tags.unwrap_or_default() {
                tags.insert(tag, inspected.clone());
            }
        }
        Ok(tags)
    }
}

impl ImageStore for PodmanApi {
    fn local_image(&self, id: &str) -> Result<Option<LocalImage>, PodmanError> {
        let path = format!("/v4.0.0/libpod/images/{}/json", wire::encode(id));
        let got: Option<Summary> = wire::get_json(self.socket(), "image inspect", &path, TIMEOUT)?;
        Ok(got.map(LocalImage::from))
    }

    fn images_in(&self, repo: &str) -> Result<Vec<LocalImage>, PodmanError> {
        let filters = serde_json::json!({ "reference": [repo] }).to_string();
        let path = format!(
            "/v4.0.0/libpod/images/json?filters={}",
            wire::encode(&filters)
        );
        let got: Option<Vec<Summary>> =
            wire::get_json(self.socket(), "image list", &path, TIMEOUT)?;
        Ok(got
            .unwrap_or_default()
            .into_iter()
            .map(LocalImage::from)
            .collect())
    }

    fn images_in_use(&self) -> Result<BTreeSet<String>, PodmanError> {
        let path = "/v1.41/containers/json?all=true";
        let got: Option<Vec<Container>> =
            wire::get_json(self.socket(), "container list", path, TIMEOUT)?;
        Ok(got
            .unwrap_or_default()
            .into_iter()
            .map(|c| bare_id(&c.image_id))
            .collect())
    }

    fn untag(&self, id: &str, tag: &str) -> Result<(), PodmanError> {
        let Some(crate::reference::RepoTag { repo, tag: t }) = crate::reference::repo_and_tag(tag)
        else {
            return Ok(());
        };
        let path = format!(
            "/v4.0.0/libpod/images/{}/untag?repo={}&tag={}",
            wire::encode(id),
            wire::encode(repo),
            wire::encode(t)
        );
        let req = wire::Request::new("image untag", "POST", &path, TIMEOUT);
        let wire::Response { status, body } =
            self.changing_images(|| wire::send(self.socket(), &req))?;
        match status {
            200..=299 | 404 => Ok(()),
            _ => Err(wire::refused("image untag", status, &body)),
        }
    }

    fn remove_image(&self, id: &str) -> Result<bool, PodmanError> {
        let path = format!("/v4.0.0/libpod/images/{}", wire::encode(id));
        let req = wire::Request::new("image remove", "DELETE", &path, TIMEOUT);
        let wire::Response { status, body } =
            self.changing_images(|| wire::send(self.socket(), &req))?;
        match status {
            200..=299 => Ok(true),
            // Gone already, or in use or named again since it was looked at.
            404 | 409 => Ok(false),
            _ => Err(wire::refused("image remove", status, &body)),
        }
    }
}
