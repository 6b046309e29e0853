//! The host as modules see it: systemd, podman, the registries it pulls from, quadlet and a
//! clock, each behind its trait.

use crate::podman::Podman;
use crate::quadlet::{Quadlet, QuadletBinary};
use crate::registry::{HttpRegistry, Registry};
use crate::systemd::{Systemctl, Systemd};
use crate::time::{Clock, SystemClock};

pub struct Host<'a> {
    pub systemd: &'a dyn Systemd,
    pub podman: &'a dyn Podman,
    pub registry: &'a dyn Registry,
    pub clock: &'a dyn Clock,
    pub quadlet: &'a dyn Quadlet,
}

impl<'a> Host<'a> {
    /// This machine: the scope's systemctl, the given podman API connection, the registries as podman's
    /// own settings describe them, and the system clock.
    pub fn real(
        podman: &'a dyn Podman,
        registry: &'a HttpRegistry,
        systemd: &'a Systemctl,
    ) -> Self {
        Host {
            systemd,
            podman,
            registry,
            clock: &SystemClock,
            quadlet: &QuadletBinary,
        }
    }
}
