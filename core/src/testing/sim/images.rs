//! The simulated host's image store: a name maps to an image ID, every image is 1 MB, and the
//! units' containers (running or not) and `foreign_users` use images.

use super::SimHost;
use crate::podman::{ImageStore, LocalImage, PodmanError};
use std::collections::BTreeSet;

/// The size of every simulated image.
pub const IMAGE_BYTES: u64 = 1_000_000;

impl SimHost {
    /// Every local image ID.
    pub fn image_ids(&self) -> BTreeSet<String> {
        self.images
            .lock()
            .expect("images")
            .values()
            .cloned()
            .collect()
    }

    /// The names pointing at an image, sorted.
    pub fn tags_of(&self, id: &str) -> Vec<String> {
        crate::testing::images::names_of(&self.images.lock().expect("images"), id)
    }
}

impl ImageStore for SimHost {
    fn local_image(&self, id: &str) -> Result<Option<LocalImage>, PodmanError> {
        Ok(self.image_ids().contains(id).then(|| LocalImage {
            id: id.to_string(),
            tags: self.tags_of(id),
            size: IMAGE_BYTES,
        }))
    }

    fn images_in(&self, repo: &str) -> Result<Vec<LocalImage>, PodmanError> {
        let prefix = format!("{repo}:");
        Ok(self
            .image_ids()
            .into_iter()
            .filter_map(|id| {
                let tags = self.tags_of(&id);
                let named = tags.iter().any(|t| t.starts_with(&prefix));
                named.then_some(LocalImage {
                    id,
                    tags,
                    size: IMAGE_BYTES,
                })
            })
            .collect())
    }

    fn images_in_use(&self) -> Result<BTreeSet<String>, PodmanError> {
        let services = self.services.lock().expect("services");
        let mut used: BTreeSet<String> = services
            .values()
            .filter_map(|s| s.container.as_ref().map(|c| c.image_id.clone()))
            .collect();
        used.extend(self.foreign_users.iter().cloned());
        Ok(used)
    }

    fn untag(&self, id: &str, tag: &str) -> Result<(), PodmanError> {
        self.note(format!("untag {id} {tag}"));
        let mut images = self.images.lock().expect("images");
        if images.get(tag).is_some_and(|to| to == id) {
            images.remove(tag);
        }
        Ok(())
    }

    fn remove_image(&self, id: &str) -> Result<bool, PodmanError> {
        self.note(format!("rmi {id}"));
        if !self.tags_of(id).is_empty() || self.images_in_use()?.contains(id) {
            return Ok(false);
        }
        self.remove_image(id);
        Ok(true)
    }
}
