//! Small answers of the simulated podman: the time a container starts at, and the refusal of
//! one-off containers.

use crate::podman::PodmanError;

/// Now, as podman dates a container's start.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The simulated host prepares no one-off containers, so it has none to run or remove either:
/// migrations run on `FakePodman`.
pub fn no_oneoffs() -> PodmanError {
    PodmanError::Api {
        call: "container create".into(),
        detail: "the simulated host runs no one-off containers".into(),
    }
}
