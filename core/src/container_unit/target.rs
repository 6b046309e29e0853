//! Targets: validated units with their services, in dependency order, and their plans.

pub use super::desired::Desired;
use super::observe::Observation;
use super::{Params, UnitError, UnitParams};
use crate::plan::{Action, Observed, Reason, RunningContainer, Wanted, plan};
use crate::systemd::Job;
use crate::unit::dropins::{DropIn, revision_with};
use crate::unit::render::RenderError;
use crate::unit::{ContainerOptions, Kind, UnitFile, UnitName, render_kind};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// A validated request for one unit file, before anything on the host is touched.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: UnitName,
    pub wanted: Wanted,
    pub path: PathBuf,
    /// None for `absent`, and for `rolled_back` until the previous revision is read.
    pub desired: Option<Desired>,
    /// A template's instances; empty for a plain unit.
    pub instances: Vec<String>,
    pub canary: Option<usize>,
    /// The services this unit orders after, from `depends_on` and its [Unit] section.
    pub after: Vec<String>,
    /// Where template instances' boot links go.
    pub systemd_dir: PathBuf,
    /// The podman secrets `secret_env` asks for, created before anything is written.
    pub secrets: Vec<super::secrets::UnitSecret>,
    /// For `rolled_back`: a prefix of the history id of the kept revision to go back to.
    pub rollback_to: Option<String>,
    /// The drop-ins quadlet merges into the unit, read from the quadlet dir: part of the
    /// revision, so a changed drop-in restarts the unit.
    pub dropins: Vec<DropIn>,
    /// What the effective revision covers besides the unit's own text: the revisions of the
    /// units it refers to (set by `references::resolve`), and extra inputs from outside the
    /// unit files (the seam for secrets and files refit did not write).
    pub inputs: crate::unit::graph::Inputs,
    /// Host files whose change restarts the unit (`inputs`).
    pub restart_on_change: Vec<PathBuf>,
}

impl Target {
    /// The services this target runs: the unit's own, or one per instance.
    pub fn services(&self) -> Vec<String> {
        if self.name.is_template() {
            self.instances
                .iter()
                .map(|i| self.name.instance_service(i))
                .collect()
        } else {
            vec![self.name.service()]
        }
    }
}

/// What converges one target: file actions once, then jobs per service.
#[derive(Debug, Clone, Default)]
pub struct TargetPlan {
    pub file: Vec<Action>,
    /// Services to stop: listed ones when wanted stopped or absent, and unlisted instances.
    pub stops: Vec<String>,
    /// Services to start or restart, in instance order.
    pub starts: Vec<(String, Job)>,
    /// Instances a `canary` run leaves on their revision.
    pub held: Vec<String>,
    /// Boot links of template instances to create and to remove.
    pub link: Vec<PathBuf>,
    pub unlink: Vec<PathBuf>,
    pub reasons: Vec<Reason>,
    pub restart_needed: bool,
    pub start_needed: bool,
}

impl TargetPlan {
    /// For a staged run: a plan that writes the file leaves the write, the reload and the boot
    /// links to the phase that installs the text (links of the new instance set would start
    /// them at boot on the old text). Says whether it did.
    pub fn defer_file(&mut self) -> bool {
        if !self.file.contains(&Action::WriteUnit) {
            return false;
        }
        self.file.clear();
        self.link.clear();
        self.unlink.clear();
        true
    }

    pub fn changes(&self) -> bool {
        !(self.file.is_empty()
            && self.stops.is_empty()
            && self.starts.is_empty()
            && self.link.is_empty()
            && self.unlink.is_empty())
    }
}

/// Validates every unit of the run and orders them by dependency. `key` names the podman
/// secrets of `secret_env`.
pub fn targets(p: &Params, key: &super::secrets::SecretKey) -> Result<Vec<Target>, UnitError> {
    let entries: Vec<&UnitParams> = if p.units.is_empty() {
        vec![&p.unit]
    } else {
        if let Some(given) = given_top_level(&p.unit) {
            return Err(UnitError::MixedUnits(given));
        }
        p.units.iter().collect()
    };
    let mut out: Vec<Target> = Vec::with_capacity(entries.len());
    let mut seen = BTreeSet::new();
    for (i, u) in entries.iter().enumerate() {
        let mut t = target(u, u.state.unwrap_or(p.state), &p.quadlet_dir, i, key).map_err(|e| {
            if p.units.is_empty() {
                e
            } else {
                e.within(&format!("units[{i}]"))
            }
        })?;
        t.systemd_dir = p.systemd_dir.clone();
        // A template's instances are files too (links to it): an instance file of the same
        // name in the same run would be the same path.
        let files = std::iter::once(t.name.file_name()).chain(
            t.instances
                .iter()
                .map(|i| format!("{}{i}.container", t.name.stem())),
        );
        for file in files {
            if !seen.insert(file.clone()) {
                return Err(UnitError::Duplicate(file));
            }
        }
        out.push(t);
    }
    super::references::resolve(&mut out, &p.quadlet_dir)?;
    let names: Vec<String> = out.iter().map(|t| t.name.file_name()).collect();
    // Which unit file runs each service, so each unit's dependencies are found by lookup,
    // not by comparing every pair of units.
    let mut runs: HashMap<String, usize> = HashMap::new();
    for (i, t) in out.iter().enumerate() {
        for s in t.services().into_iter().chain([t.name.service()]) {
            runs.entry(s).or_insert(i);
        }
    }
    let by_name: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let order = crate::order::topo(&names, |n| {
        let Some(t) = by_name.get(n).map(|&i| &out[i]) else {
            return Vec::new();
        };
        t.after
            .iter()
            .filter_map(|s| runs.get(s))
            .map(|&i| names[i].clone())
            .collect()
    });
    let mut slots: Vec<Option<Target>> = out.into_iter().map(Some).collect();
    Ok(order
        .iter()
        .filter_map(|n| by_name.get(n.as_str()).and_then(|&i| slots[i].take()))
        .collect())
}

fn given_top_level(u: &UnitParams) -> Option<&'static str> {
    let o = &u.options;
    [
        ("name", u.name.is_some()),
        ("image", o.image.is_some()),
        ("content", o.content.is_some()),
        ("instances", !u.instances.is_empty()),
        ("env", !o.env.is_empty()),
        ("exec", o.exec.is_some()),
    ]
    .into_iter()
    .find_map(|(k, given)| given.then_some(k))
}

fn target(
    u: &UnitParams,
    wanted: Wanted,
    quadlet_dir: &std::path::Path,
    index: usize,
    key: &super::secrets::SecretKey,
) -> Result<Target, UnitError> {
    let raw = u.name.as_deref().ok_or(UnitError::UnnamedUnit(index))?;
    let name = UnitName::parse(raw).map_err(|e| UnitError::from(e).within("name"))?;
    if name.is_template()
        && u.instances.is_empty()
        && !matches!(wanted, Wanted::Absent | Wanted::Stopped)
    {
        return Err(UnitError::TemplateWithoutInstances(name.file_name()));
    }
    if !name.is_template() && !u.instances.is_empty() {
        return Err(UnitError::InstancesWithoutTemplate(name.file_name()));
    }
    super::inputs::check(&u.restart_on_change)?;
    if name.is_template() && u.options.socket.is_some() {
        return Err(UnitError::Render(
            crate::unit::socket::SocketError::Template(name.file_name()).into(),
        ));
    }
    if !name.is_template() && u.canary.is_some() {
        return Err(UnitError::CanaryWithoutTemplate(name.file_name()));
    }
    for i in &u.instances {
        if i.is_empty()
            || !i
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ":_.-".contains(c))
            || i.contains("..")
        {
            return Err(UnitError::BadInstance(name.file_name(), i.clone()));
        }
    }
    if let Some(twice) = u
        .instances
        .iter()
        .enumerate()
        .find_map(|(n, i)| u.instances[..n].contains(i).then_some(i))
    {
        return Err(UnitError::DuplicateInstance(
            name.file_name(),
            twice.clone(),
        ));
    }
    if u.rollback_to.is_some() && wanted != Wanted::RolledBack {
        return Err(UnitError::RollbackToWithoutRollback(name.file_name()));
    }
    let dropins = crate::unit::dropins::read(quadlet_dir, &name.file_name())?;
    let desired = match wanted {
        Wanted::Absent | Wanted::RolledBack => None,
        _ => {
            let r = render_kind(name.kind(), &u.options, &|k, v| {
                super::secrets::secret_name(key, &name, k, v)
            })
            .map_err(super::render_error)?;
            super::links::check_install(&r.unit)?;
            let mut unit = r.unit;
            crate::unit::socket::pull_in(&mut unit, name.stem());
            Some(Desired::from_unit(unit, name.kind(), r.image, &dropins))
        }
    };
    let after = after_of(&u.options, desired.as_ref().map(|d| &d.unit));
    let secrets = super::secrets::of(key, &name, &u.options.secret_env);
    Ok(Target {
        path: quadlet_dir.join(name.file_name()),
        name,
        wanted,
        desired,
        instances: u.instances.clone(),
        canary: u.canary.map(|c| c as usize),
        after,
        systemd_dir: PathBuf::new(),
        secrets,
        rollback_to: u.rollback_to.clone(),
        dropins,
        inputs: crate::unit::graph::Inputs::default(),
        restart_on_change: u.restart_on_change.clone(),
    })
}

fn after_of(o: &ContainerOptions, unit: Option<&UnitFile>) -> Vec<String> {
    let mut after: Vec<String> = o
        .depends_on
        .iter()
        .map(|d| crate::unit::name::service_name(d))
        .collect();
    if let Some(u) = unit {
        for key in ["After", "Requires", "BindsTo", "Wants", "PartOf"] {
            after.extend(
                u.values("Unit", key)
                    .flat_map(|v| v.split_whitespace().map(str::to_string)),
            );
        }
    }
    after
}

/// For `rolled_back`, the desired unit is the newest revision that converged other than the
/// one running now (or, with nothing running, other than the file on disk).
pub fn resolve_rollback(t: &mut Target, obs: &mut Observation) -> Result<(), UnitError> {
    if t.wanted != Wanted::RolledBack {
        return Ok(());
    }
    let h = &obs.history;
    if let Some(prefix) = &t.rollback_to {
        let to = h.pick(&t.name.file_name(), prefix)?.clone();
        return to_record(t, obs, &to);
    }
    let prev = match obs.running_pair() {
        Some((rev, image)) => h.last_other_than(&rev, image.as_deref()),
        None => h
            .revisions
            .iter()
            .rev()
            .find(|r| Some(&r.revision) != obs.file_revision.as_ref()),
    }
    .cloned()
    .ok_or_else(|| UnitError::NoPrevious(t.name.file_name()))?;
    to_record(t, obs, &prev)
}

/// The desired unit is a recorded revision, on the image it ran.
fn to_record(
    t: &mut Target,
    obs: &mut Observation,
    rec: &crate::state::RevisionRecord,
) -> Result<(), UnitError> {
    let unit = UnitFile::parse(&rec.text).map_err(RenderError::from)?;
    t.desired = Some(Desired::recorded(
        unit,
        t.name.kind(),
        &rec.image_ref,
        &rec.revision,
    )?);
    obs.rollback_image_id = rec.image_id.clone();
    Ok(())
}

/// For `rolled_back` to a checkpoint: the unit as it was before the flow. A unit that did not
/// exist goes away; one whose services did not run gets its text and image back, and no start.
pub fn resolve_checkpoint(
    t: &mut Target,
    obs: &mut Observation,
    cp: &super::checkpoint::Checkpoint,
) -> Result<(), UnitError> {
    let Some(entry) = cp.units.get(&t.name.file_name()) else {
        return Err(UnitError::NotInCheckpoint(t.name.file_name()));
    };
    let Some(text) = &entry.text else {
        t.wanted = Wanted::Absent;
        return Ok(());
    };
    let unit = UnitFile::parse(text).map_err(RenderError::from)?;
    // The text as it was, under the revision its label named (a resource's, its own).
    let revision = crate::unit::revision::recorded_label(&unit)
        .unwrap_or_else(|| revision_with(&unit, &t.dropins));
    let image_ref = match unit.value("Container", "Image") {
        Some(i) if i.ends_with(".image") || i.ends_with(".build") => {
            let dir = t.path.parent().unwrap_or(std::path::Path::new("/"));
            super::references::image_on_disk(dir, i)?
        }
        Some(i) => i.to_string(),
        None => String::new(),
    };
    t.desired = Some(Desired::recorded(
        unit,
        t.name.kind(),
        &image_ref,
        &revision,
    )?);
    obs.rollback_image_id = entry.image_id.clone();
    if !entry.active {
        t.wanted = Wanted::Present;
    }
    Ok(())
}

/// What a resource's active service runs, for the plan, which knows containers: a network,
/// volume or image service that is up runs the desired revision whatever its text (a restart
/// would create nothing new); a pod or build runs the text on disk, so a new text restarts it.
fn resource_running(kind: Kind, desired: &str, obs: &Observed) -> Option<RunningContainer> {
    let revision = if kind.restarts_on_change() {
        obs.file_revision.clone()
    } else {
        Some(desired.to_string())
    };
    obs.active.then(|| RunningContainer {
        revision,
        image_id: obs.image_id.clone().unwrap_or_default(),
        health: None,
    })
}

/// The plan of each service, merged: file actions once, jobs per service.
pub fn plan_target(t: &Target, obs: &Observation) -> TargetPlan {
    let rev = t.desired.as_ref().map_or("", |d| d.revision.as_str());
    let mut out = TargetPlan::default();
    let services = t.services();
    // A template with no instances listed (stopped, absent) still has a file to plan.
    let mut inputs: Vec<_> = if services.is_empty() {
        vec![obs.plan_input_file()]
    } else {
        (0..services.len()).map(|i| obs.plan_input(i)).collect()
    };
    if !t.name.kind().runs_container() {
        for input in &mut inputs {
            input.container = resource_running(t.name.kind(), rev, input);
        }
    }
    for (i, input) in inputs.iter().enumerate() {
        let p = plan(t.wanted, rev, input);
        for a in &p.actions {
            match a {
                Action::WriteUnit | Action::RemoveUnit | Action::DaemonReload => {
                    if !out.file.contains(a) {
                        out.file.push(*a);
                    }
                }
                Action::Stop => out.stops.push(services[i].clone()),
                Action::Start => out.starts.push((services[i].clone(), Job::Start)),
                Action::Restart => out.starts.push((services[i].clone(), Job::Restart)),
            }
        }
        out.reasons.extend(p.reasons);
        out.restart_needed |= p.restart_needed;
        out.start_needed |= p.start_needed;
    }
    // The file is removed after its services stop, and reloaded last.
    out.file.sort_by_key(|a| match a {
        Action::WriteUnit | Action::RemoveUnit => 0,
        _ => 1,
    });
    if !matches!(t.wanted, Wanted::Present) {
        for extra in &obs.extras {
            if !out.stops.contains(extra) {
                out.stops.push(extra.clone());
                out.reasons.push(Reason::Running);
            }
        }
    }
    let wanted_links = super::links::wanted(t, &t.systemd_dir);
    out.link = wanted_links
        .iter()
        .filter(|l| !obs.links.contains(l))
        .cloned()
        .collect();
    out.unlink = obs
        .links
        .iter()
        .filter(|l| !wanted_links.contains(l))
        .cloned()
        .collect();
    let links_change = !(out.link.is_empty() && out.unlink.is_empty());
    if links_change && !out.file.contains(&Action::DaemonReload) {
        out.file.push(Action::DaemonReload);
    }
    if let Some(n) = t.canary {
        let keep = out.starts.split_off(n.min(out.starts.len()));
        out.held = keep.into_iter().map(|(s, _)| s).collect();
    }
    out.reasons.sort();
    out.reasons.dedup();
    out
}
