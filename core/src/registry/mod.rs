//! What a registry holds now: the manifest digest a tag points at, asked without pulling. Check
//! mode and `status` use it to tell whether a newer image waits under a tag, which a local look
//! cannot know. One trait, so plans can be tested without a registry. The lookup reads the
//! host's settings as podman's pull does: short-name aliases, registries.conf mirrors, certs.d
//! and auth files.

mod aliases;
mod asked;
mod auth;
mod certs;
mod conf;
mod http;
mod location;

pub use aliases::ShortNameError;
pub use asked::Asked;
pub use auth::{AuthError, Credentials, Login};
pub use certs::CertError;
pub use conf::{Endpoint, RegistriesConf};
pub use http::HttpRegistry;
pub use location::Location;

use std::path::PathBuf;

/// Where the host's container settings are read from. `host()` gives podman's own paths (as
/// root); tests give a tempdir.
#[derive(Debug, Clone)]
pub struct Roots {
    /// `/etc/containers`: registries.conf, its drop-ins, certs.d.
    pub etc_containers: PathBuf,
    /// `/var/cache/containers`: root's short-name alias cache.
    pub var_cache_containers: PathBuf,
    /// `/etc/docker`: docker's certs.d, which podman reads after its own.
    pub etc_docker: PathBuf,
    /// `$HOME/.config/containers`: a certs.d podman reads before the system's.
    pub home_containers: Option<PathBuf>,
    /// The system's CA bundles, in the order they are tried.
    pub ca_bundles: Vec<PathBuf>,
}

impl Roots {
    pub fn host() -> Self {
        let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
        Roots {
            etc_containers: PathBuf::from("/etc/containers"),
            var_cache_containers: PathBuf::from("/var/cache/containers"),
            etc_docker: PathBuf::from("/etc/docker"),
            // containers/image takes the home from $HOME, as here.
            home_containers: env("HOME").map(|h| h.join(".config/containers")),
            ca_bundles: certs::system_bundles(env("SSL_CERT_FILE")),
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "could not ask {registry} for {image}: {detail}; check the registry is reachable from this host, or run offline"
    )]
    Unreachable {
        registry: String,
        image: String,
        detail: String,
    },
    #[error(
        "{registry} answered {status} for {image}; check the reference, and the credentials in auth.json if the registry needs them"
    )]
    Refused {
        registry: String,
        image: String,
        status: u16,
    },
    #[error(
        "{registry} refused {image} ({status}) {}; log in with `podman login --authfile FILE {registry}` and give that FILE as auth_file, or check the login's access to the repository",
        if *had_login { "with the login refit sent" } else { "with no login: none for it was found" }
    )]
    Unauthorized {
        registry: String,
        image: String,
        status: u16,
        had_login: bool,
    },
    #[error("{0}")]
    Blocked(String),
    #[error(
        "no mirror of {image} nor its own registry answered: {tried}; check the mirrors in registries.conf"
    )]
    NoMirror { image: String, tried: String },
    #[error(
        "{image} names no registry, and none of the registries podman would pull it from answered: {tried}; write the full name (REGISTRY/REPOSITORY:TAG), or set a short-name alias for it"
    )]
    NoCandidate { image: String, tried: String },
    /// Boxed, as `ShortName` is: the error travels inside every unit's error, and should stay
    /// small there.
    #[error(transparent)]
    Untrusted(Box<Untrusted>),
    #[error(transparent)]
    AuthFile(#[from] AuthError),
    #[error(transparent)]
    ShortName(Box<ShortNameError>),
    #[error(transparent)]
    Certs(#[from] CertError),
}

impl From<ShortNameError> for RegistryError {
    fn from(e: ShortNameError) -> Self {
        RegistryError::ShortName(Box::new(e))
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{registry} sent a TLS certificate this host does not trust, for {image} ({detail}); put the certificate of the CA that signed it in {}/ca.crt, where podman reads it too, or set insecure = true for the registry in registries.conf",
    cert_dir.display()
)]
pub struct Untrusted {
    pub registry: String,
    pub image: String,
    pub detail: String,
    pub cert_dir: PathBuf,
}

pub trait Registry: Sync {
    /// The digest (`sha256:…`) the reference's tag points at in its registry now.
    fn digest(&self, image: &Location) -> Result<String, RegistryError>;
}
