//! podman volumes through the libpod API: whether one exists, and the removal of one a data
//! step left behind.

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

/// Seconds the question whether a volume exists may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether podman has the volume `name` (libpod answers 204 or 404).
pub fn exists(socket: &str, name: &str) -> Result<bool, PodmanError> {
    let path = format!("/v4.0.0/libpod/volumes/{}/exists", encode(name));
    let call = format!("volume exists {name}");
    let req = super::wire::Request::new(&call, "GET", &path, ASK_TIMEOUT);
    let super::wire::Response { status, body } = super::wire::send(socket, &req)?;
    match status {
        200..=299 => Ok(true),
        404 => Ok(false),
        _ => Err(PodmanError::Api {
            call,
            detail: format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim()),
        }),
    }
}
