//! podman's resources that have a name, volumes and networks, through the libpod API: whether
//! one exists under exactly a name, and its removal. libpod's DELETE takes a name it does not
//! know as the unique prefix of one it does (`pgdata`, gone, would remove `pgdata-15`, the old
//! cluster kept for rollback), while its `exists` asks for the exact name: so the DELETE is
//! sent only for one that exists under exactly this name.

use super::PodmanError;
use super::wire::{Request, Response, encode, refused, send};
use std::time::Duration;

/// One kind of named resource: where libpod keeps it, and how its calls are named.
pub(super) struct Named {
    /// The API's collection: `volumes`, `networks`.
    pub(super) collection: &'static str,
    /// How a call names the resource and its removal: `volume remove`, `network rm`.
    pub(super) noun: &'static str,
    pub(super) remove_verb: &'static str,
    /// How long the question whether one exists may take, and how long a removal.
    pub(super) ask_timeout: Duration,
    pub(super) remove_timeout: Duration,
}

/// Whether podman has the resource `name` (libpod answers 204 or 404).
pub(super) fn exists(socket: &str, kind: &Named, name: &str) -> Result<bool, PodmanError> {
    let path = format!("/v4.0.0/libpod/{}/{}/exists", kind.collection, encode(name));
    let call = format!("{} exists {name}", kind.noun);
    let req = Request::new(&call, "GET", &path, kind.ask_timeout);
    let Response { status, body } = send(socket, &req)?;
    match status {
        200..=299 => Ok(true),
        404 => Ok(false),
        _ => Err(refused(call, status, &body)),
    }
}

/// Removes the resource `name`, never by force: one a container still uses is refused by
/// podman, and said as such; one that is gone already is not an error.
pub(super) fn remove(socket: &str, kind: &Named, name: &str) -> Result<(), PodmanError> {
    if !exists(socket, kind, name)? {
        return Ok(());
    }
    let path = format!("/v4.0.0/libpod/{}/{}", kind.collection, encode(name));
    let call = format!("{} {} {name}", kind.noun, kind.remove_verb);
    let req = Request::new(&call, "DELETE", &path, kind.remove_timeout);
    let Response { status, body } = send(socket, &req)?;
    match status {
        200..=299 | 404 => Ok(()),
        _ => Err(refused(call, status, &body)),
    }
}
