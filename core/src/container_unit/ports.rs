//! The ports a user scope cannot bind: published ports and socket `listen` addresses below
//! `net.ipv4.ip_unprivileged_port_start`, refused before anything on the host is touched.

use super::{Params, UnitError};

/// Refuses, in a user scope, a published port or a socket's port that the user cannot bind.
pub fn refuse_privileged(p: &Params, scope: &crate::scope::Scope) -> Result<(), UnitError> {
    let top = std::iter::once((String::new(), &p.unit));
    let entries = p
        .units
        .iter()
        .enumerate()
        .map(|(i, u)| (format!("units[{i}]."), u));
    for (at, unit) in top.chain(entries) {
        for (i, v) in unit.options.ports.iter().enumerate() {
            if let Some(port) = crate::scope::port_of_publish(v) {
                scope.refuse_privileged_port(port, &format!("{at}ports[{i}]"))?;
            }
        }
        let listen = unit.options.socket.as_ref().and_then(|s| s.get("listen"));
        let listen = listen
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten();
        for (i, v) in listen.enumerate() {
            if let Some(port) = v.as_str().and_then(crate::scope::port_of_listen) {
                scope.refuse_privileged_port(port, &format!("{at}socket.listen[{i}]"))?;
            }
        }
    }
    Ok(())
}
