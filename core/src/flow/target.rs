//! The systemd target that groups a deployment's services (their units say `PartOf=` it),
//! written by `begin` itself, so that a deploy needs no Python module on the host to write one
//! file, and costs no round trip of its own.

use super::FlowError;
use crate::host::Host;
use crate::state::{atomic_write, read_optional};
use std::path::{Path, PathBuf};

/// The target's name, judged before the host is touched: a plain unit name ending `.target`.
pub fn validate(name: &str) -> Result<(), FlowError> {
    crate::unit::name::validate_systemd_unit(name)
        .map_err(|e| FlowError::Params(format!("target: {e}")))?;
    if !name.ends_with(".target") || name.len() == ".target".len() {
        return Err(FlowError::Params(format!(
            "target: {name:?} is not a target unit; give a name like foreman.target"
        )));
    }
    Ok(())
}

fn text(name: &str) -> String {
    format!("[Unit]\nDescription=refit: the services of {name}\n")
}

/// Writes the target when it is missing or differs, then reloads systemd so units that are
/// part of it find it; in check mode only says whether it would. Returns whether it changed.
pub fn ensure(host: &Host, systemd_dir: &Path, name: &str, check: bool) -> Result<bool, FlowError> {
    let path: PathBuf = systemd_dir.join(name);
    let want = text(name);
    if read_optional(&path)?.as_deref() == Some(want.as_str()) {
        return Ok(false);
    }
    if !check {
        std::fs::create_dir_all(systemd_dir)
            .map_err(crate::state::io_err("create", systemd_dir))?;
        atomic_write(&path, want.as_bytes(), 0o644)?;
        host.systemd.daemon_reload()?;
    }
    Ok(true)
}
