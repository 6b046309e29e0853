//! podman networks through the libpod API: whether one exists, and its removal before quadlet
//! creates it anew with a changed `.network`'s options.

use super::PodmanError;
use super::wire::encode;
use std::time::Duration;

/// Seconds a question or a removal may take: a network is a small record and a netavark call.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Whether podman has the network `name` (libpod answers 204 or 404).
pub fn exists(socket: &str, name: &str) -> Result<bool, PodmanError> {
    let path = format!("/v4.0.0/libpod/networks/{}/exists", encode(name));
    let call = format!("network exists {name}");
    let req = super::wire::Request::new(&call, "GET", &path, TIMEOUT);
    let super::wire::Response { status, body } = super::wire::send(socket, &req)?;
    match status {
        200..=299 => Ok(true),
        404 => Ok(false),
        _ => Err(super::wire::refused(call, status, &body)),
    }
}

/// Removes network `name`, never by force: one a container still uses is refused by podman,
/// and said as such. One that is gone already is not an error. As for volumes, the DELETE is
/// sent only for a network that exists under exactly this name (libpod also takes an id prefix).
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    if !exists(socket, name)? {
        return Ok(());
    }
    let path = format!("/v4.0.0/libpod/networks/{}", encode(name));
    let call = format!("network rm {name}");
    let req = super::wire::Request::new(&call, "DELETE", &path, TIMEOUT);
    let super::wire::Response { status, body } = super::wire::send(socket, &req)?;
    match status {
        200..=299 | 404 => Ok(()),
        _ => Err(super::wire::refused(call, status, &body)),
    }
}
