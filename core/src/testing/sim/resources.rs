//! The services quadlet makes of a `.network`, `.volume` or `.image` unit: oneshots that create
//! what is missing and stay active (`RemainAfterExit=yes`), with no container.

use super::SimHost;

/// The suffixes of such services.
const RESOURCES: [&str; 3] = ["-network.service", "-volume.service", "-image.service"];

/// Starts `service` as such a oneshot, with a new invocation: true when it is one; false (and
/// nothing done) for any other service.
pub fn start_resource(sim: &SimHost, service: &str) -> bool {
    if !RESOURCES.iter().any(|r| service.ends_with(r)) {
        return false;
    }
    let invocation = {
        let mut n = sim.next.lock().expect("next");
        *n += 1;
        *n
    };
    let mut services = sim.services.lock().expect("services");
    let s = services.entry(service.to_string()).or_default();
    (s.active, s.sub, s.invocation, s.container) = ("active", "exited", invocation, None);
    true
}
