//! What is there now: the file on disk, what refit recorded, and what systemd and podman report
//! for each service of the target. Reads only.

use super::{Host, Target, UnitError};
use crate::plan::{Observed, RunningContainer};
use crate::podman::{ContainerInfo, UnitSelection};
use crate::state::{StateDir, UnitHistory, read_optional};
use crate::systemd::UnitStatus;
use crate::unit::UnitFile;
use crate::unit::dropins::revision_with;
use crate::unit::revision::{canonical_text, recorded_label};
use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub struct ServiceObs {
    pub service: String,
    pub active: bool,
    pub need_daemon_reload: bool,
    pub invocation_id: String,
    /// The running container, if any.
    pub container: Option<ContainerInfo>,
}

/// A revision by its text hash, and the image ID it ran (None where none is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionImage {
    pub revision: String,
    pub image_id: Option<String>,
}

/// What the look at a unit refit did not write found.
#[derive(Debug, Clone, Default)]
pub struct TakeOver {
    /// The newest modification of the file and its drop-ins, in seconds since the epoch.
    pub changed_at: Option<i64>,
    /// The file carries no refit label: written by another tool or by hand.
    pub unlabelled: bool,
    /// Every service runs the desired text, healthy, on the desired image, and refit has not
    /// recorded that revision as the one running: this run takes it over.
    pub adopted: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Observation {
    pub file_text: Option<String>,
    pub file_revision: Option<String>,
    pub history: UnitHistory,
    /// One per service of the target, in `Target::services` order.
    pub services: Vec<ServiceObs>,
    /// Running instances of a template that are not listed: to be stopped.
    pub extras: Vec<String>,
    /// The local image ID of the desired reference: as observed, then as fetched.
    pub image_id: Option<String>,
    /// Check mode: the registry holds a newer image than `image_id`; None when not asked or
    /// it could not tell.
    pub newer_image: Option<bool>,
    /// For `rolled_back`: the image ID the previous revision ran.
    pub rollback_image_id: Option<String>,
    /// A template's instance boot links that exist now.
    pub links: Vec<std::path::PathBuf>,
    /// The target's `restart_on_change` files and other tools' secrets, with when each last
    /// changed.
    pub inputs: Vec<super::inputs::Input>,
    /// What `adopt::take_over` found of a file refit did not write.
    pub takeover: TakeOver,
    /// A staged run's new image under the tag the unit file already names, which the tag does
    /// not name until the unit's install (`state::Held`).
    pub held: Option<crate::state::Held>,
}

impl Observation {
    /// What the plan needs to know about service `i`.
    pub fn plan_input(&self, i: usize) -> Observed {
        let s = &self.services[i];
        Observed {
            need_daemon_reload: s.need_daemon_reload,
            active: s.active,
            inputs_changed: s
                .container
                .as_ref()
                .map(|c| super::inputs::changed(&self.inputs, c.started_at))
                .unwrap_or_default(),
            container: s.container.as_ref().map(|c| RunningContainer {
                revision: c.revision.clone(),
                image_id: c.image_id.clone(),
                health: c.health.clone(),
            }),
            ..self.plan_input_file()
        }
    }

    /// The file-level part alone, for a target with no services to look at.
    pub fn plan_input_file(&self) -> Observed {
        Observed {
            file_revision: self.file_revision.clone(),
            recorded_revision: self.history.written_revision().map(str::to_string),
            image_id: self.image_id.clone(),
            newer_image: self.newer_image == Some(true),
            file_unlabelled: self.takeover.unlabelled,
            ..Observed::default()
        }
    }

    /// The image the target's containers run now (the first running one's).
    pub fn running_image_id(&self) -> Option<String> {
        self.services
            .iter()
            .find_map(|s| s.container.as_ref().map(|c| c.image_id.clone()))
    }

    /// The revision and image the target's first running container runs: what a rollback
    /// goes back from.
    pub fn running_pair(&self) -> Option<RevisionImage> {
        self.services.iter().find_map(|s| {
            let c = s.container.as_ref()?;
            Some(RevisionImage {
                revision: c.revision.clone()?,
                image_id: Some(c.image_id.clone()),
            })
        })
    }

    pub fn service(&self, name: &str) -> Option<&ServiceObs> {
        self.services.iter().find(|s| s.service == name)
    }
}

/// What systemd and podman report for every target of a run, asked once for all of them, so a
/// `units` run of 50 services is one `systemctl show` and one container list, not 50 of each.
pub struct Prefetched {
    statuses: HashMap<String, UnitStatus>,
    containers: Vec<ContainerInfo>,
}

/// Every service of the targets, instances included: what `prefetch` asks systemd about.
pub fn services_of(targets: &[Target]) -> Vec<String> {
    targets.iter().flat_map(Target::services).collect()
}

pub fn prefetch(host: &Host, targets: &[Target]) -> Result<Prefetched, UnitError> {
    let services = services_of(targets);
    let plain: Vec<String> = targets
        .iter()
        .filter(|t| !t.name.is_template())
        .flat_map(Target::services)
        .collect();
    let templates: Vec<&str> = targets
        .iter()
        .filter(|t| t.name.is_template())
        .map(|t| t.name.stem())
        .collect();
    let selection = UnitSelection {
        services: &plain,
        templates: &templates,
    };
    // systemctl is a process start and podman a few socket calls: ask both at once.
    let (containers, statuses) = crate::parallel::join(
        || host.podman.containers_of(&selection),
        || {
            if services.is_empty() {
                Ok(Vec::new())
            } else {
                host.systemd.show(&services)
            }
        },
    );
    let statuses = statuses?
        .into_iter()
        .map(|st| (st.name.clone(), st))
        .collect();
    let containers = containers?;
    Ok(Prefetched {
        statuses,
        containers,
    })
}

/// The revision a file's label names, when refit wrote exactly this text under it and only its
/// inputs (drop-ins, the units it refers to) have changed since: the file is then rewritten
/// with a new label, so the container's label changes too. A hand edit usually keeps the label
/// line, but its text is not what refit wrote under that label: it counts as a revision of its
/// own, which the plan calls drift. With no history to tell the two apart, the label is taken:
/// the file is rewritten rather than left to start a container under a stale label.
fn written_for_other_inputs(unit: &UnitFile, now: &str, history: &UnitHistory) -> Option<String> {
    let label = recorded_label(unit).filter(|l| l != now)?;
    if history.revisions.is_empty() && history.written_revision().is_none() {
        return Some(label);
    }
    let text = canonical_text(unit);
    history
        .revisions
        .iter()
        .filter(|r| r.revision == label)
        .any(|r| UnitFile::parse(&r.text).is_ok_and(|w| canonical_text(&w) == text))
        .then_some(label)
}

pub fn observe(
    host: &Host,
    state: &StateDir,
    t: &Target,
    pre: &Prefetched,
) -> Result<Observation, UnitError> {
    let file_text = read_optional(&t.path)?;
    let history = state.unit_history(&t.name.file_name())?;
    let file_unit = match &file_text {
        None => None,
        Some(text) => Some(UnitFile::parse(text).map_err(|e| UnitError::BadFileOnDisk {
            unit: t.name.file_name(),
            path: t.path.clone(),
            source: e,
        })?),
    };
    let file_revision = file_unit.as_ref().map(|u| {
        let now = t.inputs.effective(&revision_with(u, &t.dropins));
        written_for_other_inputs(u, &now, &history).unwrap_or(now)
    });
    let services = t.services();
    let image_id = match t.desired.as_ref().and_then(|d| d.image.as_ref()) {
        Some(image) => host.podman.image_id(image.as_str())?,
        None => None,
    };
    let stem = [t.name.stem()];
    let own = if t.name.is_template() {
        UnitSelection {
            services: &[],
            templates: &stem,
        }
    } else {
        UnitSelection {
            services: &services,
            templates: &[],
        }
    };
    let containers: Vec<ContainerInfo> = pre
        .containers
        .iter()
        .filter(|c| own.matches(&c.unit))
        .cloned()
        .collect();
    let statuses: Vec<UnitStatus> = services
        .iter()
        .map(|svc| {
            pre.statuses
                .get(svc)
                .cloned()
                .unwrap_or_else(|| UnitStatus {
                    name: svc.clone(),
                    ..UnitStatus::default()
                })
        })
        .collect();
    let running = |svc: &str| {
        containers
            .iter()
            .find(|c| c.running() && c.unit == svc)
            .cloned()
    };
    let label = file_unit.as_ref().and_then(recorded_label);
    let changed_at = changed_at(t);
    let seen = super::oneshot::Seen {
        label: label.as_deref(),
        file_revision: file_revision.as_deref(),
        changed_at,
        history: &history,
        image_id: image_id.as_deref(),
    };
    let observed = services
        .iter()
        .zip(statuses)
        .map(|(svc, st)| ServiceObs {
            service: svc.clone(),
            active: st.is_active(),
            need_daemon_reload: st.need_daemon_reload(),
            invocation_id: st.invocation_id().to_string(),
            container: running(svc).or_else(|| super::oneshot::ran(&st, svc, &seen)),
        })
        .collect();
    let mut extras: Vec<String> = containers
        .iter()
        .filter(|c| c.running() && !services.contains(&c.unit))
        .map(|c| c.unit.clone())
        .collect();
    extras.sort();
    extras.dedup();
    Ok(Observation {
        file_text,
        file_revision,
        history,
        services: observed,
        extras,
        image_id,
        newer_image: None,
        rollback_image_id: None,
        links: super::links::existing(t, &t.systemd_dir),
        inputs: super::inputs::read(host, t)?,
        takeover: TakeOver {
            changed_at,
            ..Default::default()
        },
        held: None,
    })
}

/// The newest modification of the unit file and its drop-ins, in seconds since the epoch.
fn changed_at(t: &Target) -> Option<i64> {
    let dir = t.path.parent()?;
    let drop_ins = t.dropins.iter().map(|d| dir.join(&d.dir).join(&d.name));
    std::iter::once(t.path.clone())
        .chain(drop_ins)
        .map(|p| super::inputs::modified(&p).ok())
        .collect::<Option<Vec<i64>>>()?
        .into_iter()
        .max()
}
