//! podman networks through the libpod API: whether one exists, and its removal before quadlet
//! creates it anew with a changed `.network`'s options.

use super::PodmanError;
use super::named::{self, Named};
use std::time::Duration;

/// A network is a small record and a netavark call.
const NETWORKS: Named = Named {
    collection: "networks",
    noun: "network",
    remove_verb: "rm",
    ask_timeout: Duration::from_secs(60),
    remove_timeout: Duration::from_secs(60),
};

/// Whether podman has the network `name`.
pub fn exists(socket: &str, name: &str) -> Result<bool, PodmanError> {
    named::exists(socket, &NETWORKS, name)
}

/// Removes network `name`, never by force: one a container still uses is refused by podman.
/// One that is gone already is not an error, and only one that exists under exactly this name
/// is sent a DELETE (`named`).
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    named::remove(socket, &NETWORKS, name)
}
