//! `FakePodman`'s image store: its `images` map (a name or ID to an ID) and its containers.
//! Untagging and removing are recorded as calls, and change nothing.

use super::FakePodman;
use crate::podman::{ImageStore, LocalImage, PodmanError};
use std::collections::{BTreeSet, HashMap};

/// The names in a fake's image map (a name or ID to an ID) that point at `id`, sorted: its tags.
pub fn names_of(images: &HashMap<String, String>, id: &str) -> Vec<String> {
    let mut tags: Vec<String> = images
        .iter()
        .filter(|(name, to)| *to == id && *name != id)
        .map(|(name, _)| name.clone())
        .collect();
    tags.sort();
    tags
}

impl FakePodman {
    fn names_of(&self, id: &str) -> Vec<String> {
        names_of(&self.images, id)
    }

    fn note(&self, call: String) {
        self.calls.lock().expect("calls").push(call);
    }
}

impl ImageStore for FakePodman {
    fn local_image(&self, id: &str) -> Result<Option<LocalImage>, PodmanError> {
        Ok(self.images.values().any(|v| v == id).then(|| LocalImage {
            id: id.to_string(),
            tags: self.names_of(id),
            size: 0,
        }))
    }

    fn images_in(&self, repo: &str) -> Result<Vec<LocalImage>, PodmanError> {
        let prefix = format!("{repo}:");
        let ids: BTreeSet<&String> = self
            .images
            .iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .map(|(_, id)| id)
            .collect();
        Ok(ids
            .into_iter()
            .map(|id| LocalImage {
                id: id.clone(),
                tags: self.names_of(id),
                size: 0,
            })
            .collect())
    }

    fn images_in_use(&self) -> Result<BTreeSet<String>, PodmanError> {
        Ok(self.containers.iter().map(|c| c.image_id.clone()).collect())
    }

    fn untag(&self, id: &str, tag: &str) -> Result<(), PodmanError> {
        self.note(format!("untag {id} {tag}"));
        Ok(())
    }

    fn remove_image(&self, id: &str) -> Result<bool, PodmanError> {
        self.note(format!("rmi {id}"));
        Ok(true)
    }
}
