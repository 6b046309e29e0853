//! podman volumes through the libpod API: only the removal of one a data step left behind.

use super::PodmanError;
use super::wire::encode;
use std::time::Duration;

/// Seconds a removal may take: podman deletes the volume's files, which a large old cluster
/// has many of.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Removes volume `name`; one that is gone already is not an error, one a container still
/// uses is (podman's 409, said as such).
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    let path = format!("/v4.0.0/libpod/volumes/{}", encode(name));
    let call = format!("volume remove {name}");
    let req = super::wire::Request::new(&call, "DELETE", &path, TIMEOUT);
    let super::wire::Response { status, body } = super::wire::send(socket, &req)?;
    match status {
        200..=299 | 404 => Ok(()),
        _ => Err(PodmanError::Api {
            call,
            detail: format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim()),
        }),
    }
}
