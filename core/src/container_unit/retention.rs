//! After a run: each changed unit keeps its newest `keep_revisions` revisions, the images of
//! those stay tagged, and the images refit pulled for revisions no longer kept are removed.
//!
//! What protects a kept image, and from what: a tag of refit's own,
//! `localhost/refit-keep/NAME-HASH:img-ID12` (the repository fetch's `:previous` tag lives in),
//! keeps it from `podman image prune`, which removes only untagged images. Nothing short of a
//! container keeps an image from `podman image prune -a`, which removes every image no
//! container uses, tagged or not. refit does not create a stopped holder container per kept
//! image: it would show in every `podman ps -a`, and `podman container prune` (or `system
//! prune`, which people run with it) removes it first, so it would protect against one of the
//! two commands only. Instead refit removes what it no longer needs itself, so no prune is
//! needed after an update, and a rollback to an image a prune took says so
//! (`history` shows `local: false`).
//!
//! What refit removes: only an image refit pulled for this unit (recorded in its history),
//! that no kept revision runs, that no container (running or not, whoever made it) uses, and
//! that has no tag but refit's own. An image some other tag names stays, and is looked at
//! again after the next run that changes the unit.

use super::fetch::keep_repo;
use super::work::Work;
use super::{Host, UnitError};
use crate::plan::Wanted;
use crate::podman::LocalImage;
use crate::results::container_unit::{HistoryEntry, PrunedImage};
use crate::state::{StateDir, StateError, read_optional};
use std::collections::BTreeSet;

/// The tag that keeps one kept image.
pub fn keep_tag(stem: &str, image_id: &str) -> String {
    let short: String = image_id.chars().take(12).collect();
    format!("{}:img-{short}", keep_repo(stem))
}

/// What the run asks of retention.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    pub keep: usize,
    /// The run converged: images may be removed. A failed run only tags and trims.
    pub prune: bool,
    /// Report each unit's kept revisions.
    pub history: bool,
}

/// Trims, tags and prunes every target this run changed or pulled for, and fills in the
/// reports; returns warnings for what could not be done (the next run tries again). In check
/// mode it only reads.
pub fn after_run(
    host: &Host,
    state: &StateDir,
    work: &mut [Work],
    r: Retention,
    check: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut tidy = Tidy {
        host,
        state,
        in_use: None,
    };
    for Work {
        target: t,
        plan,
        report,
        ..
    } in work.iter_mut()
    {
        let unit = t.name.file_name();
        let pulled = report
            .result
            .image
            .id
            .clone()
            .filter(|_| report.result.image.pulled);
        // `present` converges nothing, so what is kept does not change: a flow's preflight
        // (which pulls with `present`, and the default count) only notes what it pulled.
        let converges = t.wanted != Wanted::Present && plan.changes();
        if !check && (converges || pulled.is_some()) {
            let r = Retention {
                prune: r.prune && converges,
                ..r
            };
            match retain(&mut tidy, t, pulled, converges, r) {
                Ok(pruned) => report.result.images_pruned = pruned,
                Err(e) => warnings.push(format!(
                    "{unit}: its kept images could not be tidied ({e}); the next run that changes it tries again"
                )),
            }
        }
        if r.history {
            match history_of(host, state, &unit) {
                Ok(h) => report.result.history = Some(h),
                Err(e) => warnings.push(format!("{unit}: its history could not be read: {e}")),
            }
        }
    }
    warnings
}

/// Where the units' images are tidied, and the images containers use, asked once a run when
/// the first unit has one to remove.
struct Tidy<'a> {
    host: &'a Host<'a>,
    state: &'a StateDir,
    in_use: Option<BTreeSet<String>>,
}

/// One unit: note what was pulled for it; when it converged, trim its history, tag what it
/// keeps, untag and remove what it no longer needs.
fn retain(
    tidy: &mut Tidy,
    t: &super::Target,
    pulled: Option<String>,
    converged: bool,
    r: Retention,
) -> Result<Vec<PrunedImage>, UnitError> {
    let (podman, state, in_use) = (tidy.host.podman, tidy.state, &mut tidy.in_use);
    let (stem, unit) = (t.name.stem(), t.name.file_name());
    let unit = unit.as_str();
    let mut h = state.unit_history(unit)?;
    if let Some(id) = &pulled {
        h.note_pulled(id);
    }
    if !converged {
        state.save_unit_history(unit, &h)?;
        return Ok(Vec::new());
    }
    if let Some(cur) = h.revisions.last_mut()
        && cur.stream.is_none()
    {
        cur.stream = stream_now(state)?;
    }
    h.keep(r.keep);
    let kept: BTreeSet<String> = h
        .revisions
        .iter()
        .filter_map(|r| r.image_id.clone())
        .collect();
    // Tagged first, so an image is never without refit's tag between two kept revisions.
    for id in &kept {
        if let Some(img) = podman.local_image(id)? {
            let tag = keep_tag(stem, id);
            if !img.tags.contains(&tag) {
                podman.tag(id, &tag)?;
            }
        }
    }
    let repo = keep_repo(stem);
    for img in podman.images_in(&repo)? {
        if kept.contains(&img.id) {
            continue;
        }
        for tag in img.tags.iter().filter(|t| in_repo(t, &repo)) {
            podman.untag(&img.id, tag)?;
        }
    }
    let mut pruned = Vec::new();
    if r.prune {
        let candidates: Vec<String> = h
            .pulled
            .iter()
            .filter(|id| !kept.contains(*id))
            .cloned()
            .collect();
        for id in candidates {
            let Some(img) = podman.local_image(&id)? else {
                h.pulled.retain(|p| *p != id);
                continue;
            };
            if in_use.is_none() {
                *in_use = Some(podman.images_in_use()?);
            }
            if !removable(&img, &repo, in_use.as_ref()) {
                continue;
            }
            if podman.remove_image(&id)? {
                h.pulled.retain(|p| *p != id);
                pruned.push(PrunedImage {
                    id: id.clone(),
                    bytes: img.size,
                });
            }
        }
    }
    state.save_unit_history(unit, &h)?;
    Ok(pruned)
}

fn in_repo(tag: &str, repo: &str) -> bool {
    tag.strip_prefix(repo)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// An image goes only when no container uses it and it has no tag but refit's own for this
/// unit (which were taken off already, unless podman kept them).
fn removable(img: &LocalImage, repo: &str, in_use: Option<&BTreeSet<String>>) -> bool {
    in_use.is_some_and(|u| !u.contains(&img.id)) && img.tags.iter().all(|t| in_repo(t, repo))
}

/// The stream the host is going to (a flow's lease) or is on (the last finished flow's). A
/// lease or stream file that cannot be read is refused, as every other reader refuses it: a
/// revision recorded without its stream would be rolled back to as if it were of none.
pub(super) fn stream_now(state: &StateDir) -> Result<Option<String>, StateError> {
    let stream = match state.read_lease()? {
        Some(lease) => Some(lease.stream),
        None => read_optional(&state.stream_file())?.map(|s| s.trim().to_string()),
    };
    Ok(stream.filter(|s| !s.is_empty()))
}

/// The unit's kept revisions, oldest first, and whether each one's image is still local.
pub fn history_of(
    host: &Host,
    state: &StateDir,
    unit: &str,
) -> Result<Vec<HistoryEntry>, UnitError> {
    let h = state.unit_history(unit)?;
    let last = h.revisions.len().saturating_sub(1);
    let mut out = Vec::with_capacity(h.revisions.len());
    for (i, r) in h.revisions.iter().enumerate() {
        let local = match &r.image_id {
            Some(id) => host.podman.image_id(id)?.is_some(),
            None => host.podman.image_id(&r.image_ref)?.is_some(),
        };
        out.push(HistoryEntry {
            id: r.id(),
            revision: r.revision.clone(),
            image_ref: r.image_ref.clone(),
            image_id: r.image_id.clone(),
            local,
            stream: r.stream.clone(),
            recorded_at: r.recorded_at.clone(),
            current: i == last,
        });
    }
    Ok(out)
}

/// The sentence that says what the run's pruning freed, if it removed anything.
pub fn freed(reports: &[super::Report]) -> Option<String> {
    let pruned: Vec<&PrunedImage> = reports
        .iter()
        .flat_map(|r| &r.result.images_pruned)
        .collect();
    if pruned.is_empty() {
        return None;
    }
    let bytes: u64 = pruned.iter().map(|p| p.bytes).sum();
    let n = pruned.len();
    Some(format!(
        "removed {n} image{} no kept revision uses, freeing {:.1} MB",
        if n == 1 { "" } else { "s" },
        bytes as f64 / 1e6
    ))
}
