//! What is there now: the file on disk, what refit recorded, what systemd and podman report.
//! Reads only.

use super::{Host, Target, UnitError};
use crate::plan::{Observed, RunningContainer};
use crate::podman::ContainerInfo;
use crate::state::{StateDir, UnitHistory, read_optional};
use crate::unit::{UnitFile, revision};

#[derive(Debug, Clone, Default)]
pub struct Observation {
    pub file_text: Option<String>,
    pub file_revision: Option<String>,
    pub history: UnitHistory,
    pub need_daemon_reload: bool,
    pub active: bool,
    pub invocation_id: String,
    /// The running container, if any.
    pub container: Option<ContainerInfo>,
    /// The local image ID of the desired reference: as observed, then as fetched.
    pub image_id: Option<String>,
    /// For `rolled_back`: the image ID the previous revision ran.
    pub rollback_image_id: Option<String>,
}

impl Observation {
    pub fn plan_input(&self) -> Observed {
        Observed {
            file_revision: self.file_revision.clone(),
            recorded_revision: self.history.current().map(|r| r.revision.clone()),
            need_daemon_reload: self.need_daemon_reload,
            active: self.active,
            container: self.container.as_ref().map(|c| RunningContainer {
                revision: c.revision.clone(),
                image_id: c.image_id.clone(),
                health: c.health.clone(),
            }),
            image_id: self.image_id.clone(),
        }
    }

    pub fn running_image_id(&self) -> Option<String> {
        self.container.as_ref().map(|c| c.image_id.clone())
    }
}

pub fn observe(host: &Host, state: &StateDir, t: &Target) -> Result<Observation, UnitError> {
    let file_text = read_optional(&t.path)?;
    let file_revision = match &file_text {
        None => None,
        Some(text) => match UnitFile::parse(text) {
            Ok(u) => Some(revision(&u)),
            Err(e) => {
                return Err(UnitError::BadFileOnDisk {
                    unit: t.name.file_name(),
                    path: t.path.clone(),
                    detail: e.to_string(),
                });
            }
        },
    };
    let history = state.unit_history(&t.name.file_name())?;
    let service = t.name.service();
    let units = std::slice::from_ref(&service);
    let image = t.desired.as_ref().map(|d| d.image.as_str());
    // systemctl is a process start and podman a few socket calls: ask both at once.
    let (status, podman) = std::thread::scope(|s| {
        let podman = s.spawn(|| -> Result<_, UnitError> {
            let containers = host.podman.unit_containers(units)?;
            let local = match image {
                Some(i) => host.podman.image_id(i)?,
                None => None,
            };
            Ok((containers, local))
        });
        let status = host.systemd.show(units);
        (status, podman.join())
    });
    let status = status?.into_iter().next().unwrap_or_default();
    let (containers, image_id) = podman.unwrap_or_else(|p| std::panic::resume_unwind(p))?;
    let active = status.is_active();
    Ok(Observation {
        file_text,
        file_revision,
        history,
        need_daemon_reload: status.need_daemon_reload(),
        active,
        invocation_id: status.invocation_id().to_string(),
        container: containers.into_iter().find(|c| c.running),
        image_id,
        rollback_image_id: None,
    })
}
