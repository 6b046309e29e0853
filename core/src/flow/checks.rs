//! The preflight checks that read the host: disk, services, images.

use super::FlowError;
use crate::host::Host;
use crate::podman::Health;
use std::path::Path;

/// Free MiB in the image store; an error when below `need`.
pub fn check_disk(store: &Path, need: u64) -> Result<u64, FlowError> {
    // The store may not exist on a fresh host; its nearest existing parent holds it then.
    let mut p = store;
    while !p.exists() {
        p = p.parent().unwrap_or(Path::new("/"));
    }
    let st = rustix::fs::statvfs(p).map_err(|source| FlowError::Statvfs {
        path: p.to_path_buf(),
        source,
    })?;
    let free = st.f_bavail.saturating_mul(st.f_frsize) / (1024 * 1024);
    if free < need {
        return Err(FlowError::Disk {
            path: store.to_path_buf(),
            free,
            need,
        });
    }
    Ok(free)
}

/// Each service must not be failed, nor run an unhealthy container. One `systemctl show` and one
/// container list for all of them.
pub fn check_services(host: &Host, services: &[String]) -> Result<(), FlowError> {
    if services.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = services
        .iter()
        .map(|s| crate::unit::name::service_name(s))
        .collect();
    // systemctl is a process start and podman a socket call: ask both at once.
    let (containers, statuses) = crate::parallel::join(
        || host.podman.unit_containers(&names),
        || host.systemd.show(&names),
    );
    let (statuses, containers) = (statuses?, containers?);
    let mut bad = Vec::new();
    for st in &statuses {
        // A unit whose file is gone is not installed: systemd may still remember it failed
        // (until reset-failed), but nothing of it runs, and the run will install it afresh.
        if st.active_state() == "failed" && st.exists() {
            bad.push(format!(
                "{} is failed (Result={})",
                st.name,
                st.get("Result")
            ));
        } else if containers
            .iter()
            .any(|c| c.unit == st.name && c.running() && c.health == Some(Health::Unhealthy))
        {
            bad.push(format!("{} is unhealthy", st.name));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(FlowError::Unhealthy(bad.join(", ")))
    }
}

pub fn check_images(host: &Host, images: &[String]) -> Result<(), FlowError> {
    let mut missing = Vec::new();
    for i in images {
        if host.podman.image_id(i)?.is_none() {
            missing.push(i.clone());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(FlowError::MissingImages(missing.join(", ")))
    }
}
