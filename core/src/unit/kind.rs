//! The quadlet unit kinds: what each file is called, which section holds its options, which
//! service quadlet generates from it, and whether refit manages it.

use std::fmt;

/// A quadlet unit kind, named by its file's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Container,
    Network,
    Volume,
    Pod,
    Image,
    Build,
    Kube,
    Artifact,
}

/// Why refit does not manage a kind quadlet knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    #[error(
        "{0} is a .kube unit: its service plays a Kubernetes YAML file refit does not read, so refit cannot tell what it runs or when it must restart; write its containers as .container units (with a .pod), or leave the .kube file to the tool that wrote it"
    )]
    Kube(String),
    #[error(
        "{0} is an .artifact unit, which quadlet 5.4 (podman 5.4) does not know; remove it, or manage it once the host's podman reads it"
    )]
    Artifact(String),
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Container,
        Kind::Network,
        Kind::Volume,
        Kind::Pod,
        Kind::Image,
        Kind::Build,
        Kind::Kube,
        Kind::Artifact,
    ];

    /// The file suffix, without its dot: `container`, `network`.
    pub fn ext(self) -> &'static str {
        match self {
            Kind::Container => "container",
            Kind::Network => "network",
            Kind::Volume => "volume",
            Kind::Pod => "pod",
            Kind::Image => "image",
            Kind::Build => "build",
            Kind::Kube => "kube",
            Kind::Artifact => "artifact",
        }
    }

    /// The kind whose suffix `ext` is.
    pub fn from_ext(ext: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.ext() == ext)
    }

    /// The section that holds the kind's own options: `[Network]` for a `.network`.
    pub fn section(self) -> &'static str {
        match self {
            Kind::Container => "Container",
            Kind::Network => "Network",
            Kind::Volume => "Volume",
            Kind::Pod => "Pod",
            Kind::Image => "Image",
            Kind::Build => "Build",
            Kind::Kube => "Kube",
            Kind::Artifact => "Artifact",
        }
    }

    /// The service quadlet 5.4 generates from the file `STEM.KIND`: `STEM.service` for a
    /// container or a kube, `STEM-KIND.service` for the rest (`db-volume.service`).
    pub fn service(self, stem: &str) -> String {
        match self {
            Kind::Container | Kind::Kube => format!("{stem}.service"),
            other => format!("{stem}-{}.service", other.ext()),
        }
    }

    /// Whether refit manages units of this kind; the reason when it does not.
    pub fn managed(self, file_name: &str) -> Result<(), KindError> {
        match self {
            Kind::Kube => Err(KindError::Kube(file_name.to_string())),
            Kind::Artifact => Err(KindError::Artifact(file_name.to_string())),
            _ => Ok(()),
        }
    }

    /// Whether the kind's service runs a container refit starts and watches; the others are
    /// resources that containers refer to (a pod's service runs only its infra container).
    pub fn runs_container(self) -> bool {
        self == Kind::Container
    }

    /// Whether a changed text must restart the kind's own service to take effect: a pod is
    /// recreated at start, and a build runs again. A network, volume or image service creates
    /// what is missing (`--ignore`) and leaves what exists, so restarting it changes nothing.
    pub fn restarts_on_change(self) -> bool {
        matches!(self, Kind::Container | Kind::Pod | Kind::Build)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", self.ext())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_are_named_as_quadlet_names_them() {
        assert_eq!(Kind::Container.service("web"), "web.service");
        assert_eq!(Kind::Network.service("app"), "app-network.service");
        assert_eq!(Kind::Volume.service("db"), "db-volume.service");
        assert_eq!(Kind::Pod.service("stack"), "stack-pod.service");
        assert_eq!(Kind::Image.service("app"), "app-image.service");
        assert_eq!(Kind::Build.service("app"), "app-build.service");
        assert_eq!(Kind::Kube.service("k"), "k.service");
        for k in Kind::ALL {
            assert_eq!(Kind::from_ext(k.ext()), Some(k));
        }
    }

    #[test]
    fn kube_and_artifact_are_refused_with_a_reason() {
        let e = Kind::Kube.managed("k.kube").expect_err("refused");
        assert!(e.to_string().contains(".container units"), "{e}");
        assert!(Kind::Artifact.managed("a.artifact").is_err());
        assert!(Kind::Pod.managed("p.pod").is_ok());
    }
}
