//! sd_notify, for a container of a `Notify=true` unit: podman hands the container systemd's
//! notify socket (NOTIFY_SOCKET), and the unit is active only once the service says READY=1.
//! Sent after the listeners are bound, so ready means serving; MODE=hang never sends it.

use std::os::unix::net::UnixDatagram;

/// Tells the notify socket, when there is one, that the service is ready. A failure is only
/// logged: systemd then keeps the unit activating, which is what a test of it sees.
pub fn ready() {
    let Ok(path) = std::env::var("NOTIFY_SOCKET") else {
        return;
    };
    let sent = UnixDatagram::unbound().and_then(|s| s.send_to(b"READY=1", &path));
    match sent {
        Ok(_) => eprintln!("told {path} READY=1"),
        Err(e) => eprintln!("cannot notify {path}: {e}"),
    }
}
