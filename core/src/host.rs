//! The host as modules see it: systemd, podman, the registries it pulls from and a clock, each
//! behind its trait.

use crate::converge::{Clock, SystemClock};
use crate::podman::Podman;
use crate::registry::{HttpRegistry, Registry};
use crate::systemd::{Systemctl, Systemd};

pub struct Host<'a> {
    pub systemd: &'a dyn Systemd,
    pub podman: &'a dyn Podman,
    pub registry: &'a dyn Registry,
    pub clock: &'a dyn Clock,
}

impl<'a> Host<'a> {
    /// This machine: systemctl, the given podman API connection, the registries as podman's
    /// own settings describe them, and the system clock.
    pub fn real(podman: &'a dyn Podman, registry: &'a HttpRegistry) -> Self {
        Host {
            systemd: &Systemctl,
            podman,
            registry,
            clock: &SystemClock,
        }
    }
}
