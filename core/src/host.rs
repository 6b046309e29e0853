//! The host as modules see it: systemd, podman and a clock, each behind its trait.

use crate::converge::{Clock, SystemClock};
use crate::podman::Podman;
use crate::systemd::{Systemctl, Systemd};

pub struct Host<'a> {
    pub systemd: &'a dyn Systemd,
    pub podman: &'a dyn Podman,
    pub clock: &'a dyn Clock,
}

impl<'a> Host<'a> {
    /// This machine: systemctl, the given podman API connection and the system clock.
    pub fn real(podman: &'a dyn Podman) -> Self {
        Host {
            systemd: &Systemctl,
            podman,
            clock: &SystemClock,
        }
    }
}
