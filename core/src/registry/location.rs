//! Where a reference lives: registry, repository and tag, with the defaults podman applies to a
//! reference that names no registry.

use crate::podman::ImageRef;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `127.0.0.1:5000`, `quay.io`; `docker.io` when the reference names none.
    pub registry: String,
    pub repository: String,
    pub tag: String,
    /// Set when the reference pins a digest: then nothing newer can wait under it.
    pub digest: Option<String>,
}

impl Location {
    pub fn of(image: &ImageRef) -> Self {
        let (name_tag, digest) = match image.as_str().split_once('@') {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (image.as_str(), None),
        };
        let (name, tag) = crate::reference::repo_and_tag(name_tag)
            .map_or((name_tag, "latest".to_string()), |(n, t)| {
                (n, t.to_string())
            });
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), rest.to_string())
            }
            Some(_) => ("docker.io".to_string(), name.to_string()),
            None => ("docker.io".to_string(), format!("library/{name}")),
        };
        Location {
            registry,
            repository,
            tag,
            digest,
        }
    }

    /// `REGISTRY/REPOSITORY`, as podman writes it in an image's RepoDigests.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(raw: &str) -> Location {
        Location::of(&ImageRef::parse(raw).expect("a valid reference"))
    }

    #[test]
    fn applies_podmans_defaults() {
        let l = loc("127.0.0.1:5000/foreman-db:1.0");
        assert_eq!(
            (l.registry.as_str(), l.repository.as_str(), l.tag.as_str()),
            ("127.0.0.1:5000", "foreman-db", "1.0")
        );
        let l = loc("localhost:5000/a/b");
        assert_eq!(
            (l.name().as_str(), l.tag.as_str()),
            ("localhost:5000/a/b", "latest")
        );
        assert_eq!(loc("alpine").name(), "docker.io/library/alpine");
        assert_eq!(loc("team/app:2").name(), "docker.io/team/app");
        let pinned = loc(&format!("quay.io/x/y@sha256:{}", "a".repeat(64)));
        assert_eq!(pinned.digest, Some(format!("sha256:{}", "a".repeat(64))));
    }
}
