//! What a registry holds now: the manifest digest a tag points at, asked without pulling. Check
//! mode and `status` use it to tell whether a newer image waits under a tag, which a local look
//! cannot know. One trait, so plans can be tested without a registry.

mod asked;
mod auth;
mod conf;
mod http;
mod location;

pub use asked::Asked;
pub use auth::{AuthError, Credentials, Login};
pub use conf::{Endpoint, RegistriesConf};
pub use http::HttpRegistry;
pub use location::Location;

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
    #[error(transparent)]
    AuthFile(#[from] AuthError),
}

pub trait Registry: Sync {
    /// The digest (`sha256:…`) the reference's tag points at in its registry now.
    fn digest(&self, image: &Location) -> Result<String, RegistryError>;
}
