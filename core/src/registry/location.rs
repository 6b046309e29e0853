//! Where a reference lives: registry, repository and tag. A reference that names no registry
//! (a short name) keeps the name as written: which registry podman asks for it depends on the
//! host's short-name aliases and search registries (see `aliases`), not on the reference.

use crate::podman::ImageRef;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `127.0.0.1:5000`, `quay.io`. For a short name, `docker.io`: Docker Hub's completion,
    /// which is what podman's Docker-compatible API pulls (containers.conf
    /// `compat_api_enforce_docker_hub`, on by default) when no local image holds the name.
    pub registry: String,
    pub repository: String,
    pub tag: String,
    /// Set when the reference pins a digest: then nothing newer can wait under it.
    pub digest: Option<String>,
    /// The name as written, without tag or digest, when it names no registry (`foreman-db`,
    /// `team/app`): the key podman looks up in the `[aliases]` tables.
    pub short: Option<String>,
}

impl Location {
    pub fn of(image: &ImageRef) -> Self {
        let (name_tag, digest) = match image.as_str().split_once('@') {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (image.as_str(), None),
        };
        let crate::reference::RepoTag { repo: name, tag } =
            crate::reference::repo_and_tag(name_tag).unwrap_or(crate::reference::RepoTag {
                repo: name_tag,
                tag: "latest",
            });
        let tag = tag.to_string();
        let short = match name.split_once('/') {
            Some((first, _)) if names_a_registry(first) => None,
            _ => Some(name.to_string()),
        };
        let qualified = match &short {
            Some(s) => format!("docker.io/{s}"),
            None => name.to_string(),
        };
        Location {
            short,
            digest,
            ..Location::qualified(&qualified, &tag)
        }
    }

    /// A fully qualified `REGISTRY/REPOSITORY` with `tag`: what an alias or a search registry
    /// makes of a short name. Docker Hub's official images live under `library/`, and podman
    /// adds it (`docker.io/alpine` is `docker.io/library/alpine`).
    pub(super) fn qualified(name: &str, tag: &str) -> Self {
        let (registry, repository) = name.split_once('/').unwrap_or((name, ""));
        let repository = if registry == "docker.io" && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository.to_string()
        };
        Location {
            registry: registry.to_string(),
            repository,
            tag: tag.to_string(),
            digest: None,
            short: None,
        }
    }

    /// `REGISTRY/REPOSITORY`, as podman writes it in an image's RepoDigests.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

/// Whether a reference's first component is a registry host, as the distribution grammar
/// (and so podman) splits it: a `.` or a `:`, `localhost`, or an upper-case letter, which a
/// repository path may not hold.
pub(super) fn names_a_registry(first: &str) -> bool {
    first.contains(['.', ':'])
        || first == "localhost"
        || first.chars().any(|c| c.is_ascii_uppercase())
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
        assert_eq!(l.short, None);
        let l = loc("localhost:5000/a/b");
        assert_eq!(
            (l.name().as_str(), l.tag.as_str()),
            ("localhost:5000/a/b", "latest")
        );
        assert_eq!(loc("localhost/a").short, None, "localhost is a registry");
        let pinned = loc(&format!("quay.io/x/y@sha256:{}", "a".repeat(64)));
        assert_eq!(pinned.digest, Some(format!("sha256:{}", "a".repeat(64))));
    }

    #[test]
    fn a_short_name_keeps_its_name_and_docker_hubs_completion() {
        let l = loc("alpine");
        assert_eq!(l.short.as_deref(), Some("alpine"));
        assert_eq!(l.name(), "docker.io/library/alpine");
        let l = loc("team/app:2");
        assert_eq!(
            (l.short.as_deref(), l.name().as_str(), l.tag.as_str()),
            (Some("team/app"), "docker.io/team/app", "2")
        );
        let l = loc(&format!("foreman-db:1.0@sha256:{}", "b".repeat(64)));
        assert_eq!(l.short.as_deref(), Some("foreman-db"), "no tag, no digest");
    }

    #[test]
    fn docker_hubs_official_images_live_under_library() {
        assert_eq!(loc("docker.io/alpine:3").name(), "docker.io/library/alpine");
        assert_eq!(loc("docker.io/team/app").name(), "docker.io/team/app");
        assert_eq!(
            Location::qualified("quay.io/alpine", "1").name(),
            "quay.io/alpine"
        );
    }
}
