//! A target once observed: the revision a rollback or a checkpoint asks for, and the plan that
//! takes the host from what it has to what the target wants.

use super::UnitError;
use super::desired::Desired;
use super::observe::Observation;
use super::target::{ServiceJob, Target, TargetPlan};
use crate::plan::{Action, Observed, Reason, RunningContainer, Wanted, plan};
use crate::systemd::Job;
use crate::unit::dropins::revision_with;
use crate::unit::render::RenderError;
use crate::unit::{Kind, UnitFile};

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
        Some(ran) => h.last_other_than(&ran.revision, ran.image_id.as_deref()),
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
                Action::Start => out.starts.push(ServiceJob {
                    service: services[i].clone(),
                    job: Job::Start,
                }),
                Action::Restart => out.starts.push(ServiceJob {
                    service: services[i].clone(),
                    job: Job::Restart,
                }),
            }
        }
        out.reasons.extend(p.reasons);
        out.restart_needed |= p.restart_needed;
        out.start_needed |= p.start_needed && !t.never_started;
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
        out.held = keep.into_iter().map(|s| s.service).collect();
    }
    out.reasons.sort();
    out.reasons.dedup();
    out
}
