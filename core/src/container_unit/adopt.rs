//! Units refit finds serving without having recorded them, recorded with no restart.
//!
//! - A revision found serving that this run did not restart, though refit has not recorded it
//!   as one that ran: started by `run_migrations` right after its migration (`start_after`), or
//!   by a run killed before it recorded. Seen converged (every service active, its container on
//!   the desired text and image, healthy where it has a health check), it is recorded now;
//!   otherwise the revision before it would stay the one a rollback returns to.
//! - A unit another tool (or a hand) wrote: neither its file nor its container carries refit's
//!   label. Its container is recognised as running the file's text when systemd has no reload
//!   of that file pending and the container started after the file and its drop-ins last
//!   changed; podman then created it from that text. A file that means what the desired text
//!   means (comments, spacing, the order of different keys and refit's label aside) is the
//!   desired text: the unit is taken over as it runs, and its file is left as it is until the
//!   unit's next real change, when refit writes its own text, label included.

use super::jobs::record;
use super::observe::{Observation, ServiceObs};
use super::target::{Desired, Target};
use super::work::Work;
use crate::plan::Wanted;
use crate::podman::Health;
use crate::state::{RevisionRecord, StateDir, StateError};
use crate::unit::UnitFile;
use crate::unit::revision::{is_revision_label, recorded_label};
use std::collections::BTreeMap;

/// Recognises the containers of a file refit did not write, and takes the unit over where
/// they run the desired text. Called once the desired image is known, before the plan.
pub fn take_over(t: &Target, obs: &mut Observation) {
    let Some(d) = &t.desired else {
        return;
    };
    let Some(unit) = obs
        .file_text
        .as_deref()
        .and_then(|s| UnitFile::parse(s).ok())
    else {
        return;
    };
    if recorded_label(&unit).is_some() {
        return;
    }
    obs.takeover.unlabelled = true;
    let same = meaning(&unit) == meaning(&d.unit);
    if same {
        obs.file_revision = Some(d.revision.clone());
    }
    let (Some(runs), Some(changed_at)) = (obs.file_revision.clone(), obs.takeover.changed_at)
    else {
        return;
    };
    let mut all = !obs.services.is_empty();
    for s in &mut obs.services {
        match s.container.as_mut() {
            Some(c)
                if c.revision.is_none()
                    && c.running()
                    && !s.need_daemon_reload
                    && c.started_at >= changed_at =>
            {
                c.revision = Some(runs.clone());
            }
            _ => all = false,
        }
    }
    let image = obs.image_id.as_deref();
    let recorded = obs
        .history
        .current()
        .is_some_and(|r| r.is(&d.revision, image));
    obs.takeover.adopted = same
        && all
        && !recorded
        && matches!(t.wanted, Wanted::Present | Wanted::Started)
        && image.is_some_and(|id| obs.services.iter().all(|s| serves(s, d, id)));
}

/// A unit as quadlet and systemd read it: sections merged by name, and in each the values of
/// each key in their order, refit's label left out. systemd takes a key's values in order (a
/// later `Environment=` wins, an empty value resets a list), but the order of different keys
/// changes nothing, and quadlet turns each key into arguments in an order of its own.
fn meaning(unit: &UnitFile) -> BTreeMap<(&str, &str), Vec<&str>> {
    let mut out: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for s in &unit.sections {
        for e in &s.entries {
            if !is_revision_label(&s.name, &e.key, &e.value) {
                out.entry((s.name.as_str(), e.key.as_str()))
                    .or_default()
                    .push(e.value.as_str());
            }
        }
    }
    out
}

/// Records, for every unchanged target wanted started or taken over, the revision it was seen
/// converged on, where refit's history has another as the last that ran.
pub fn record_converged(state: &StateDir, work: &[Work]) -> Result<(), StateError> {
    for Work {
        target: t,
        observed: obs,
        plan,
        ..
    } in work
    {
        if plan.changes() || !(t.wanted == Wanted::Started || obs.takeover.adopted) {
            continue;
        }
        let (Some(d), Some(image_id)) = (&t.desired, obs.image_id.as_deref()) else {
            continue;
        };
        let known = obs
            .history
            .current()
            .is_some_and(|c| c.is(&d.revision, Some(image_id)));
        if known || obs.services.is_empty() || !obs.services.iter().all(|s| serves(s, d, image_id))
        {
            continue;
        }
        let mut history = obs.history.clone();
        // The stream of the flow that started it, as a revision this run restarted gets.
        let stream = super::retention::stream_now(state)?;
        history.record(RevisionRecord {
            stream,
            ..record(d, Some(image_id.to_string()))
        });
        state.save_unit_history(&t.name.file_name(), &history)?;
    }
    Ok(())
}

fn serves(s: &ServiceObs, d: &Desired, image_id: &str) -> bool {
    let Some(c) = &s.container else {
        return false;
    };
    s.active
        && c.running()
        && c.revision.as_deref() == Some(d.revision.as_str())
        && c.image_id == image_id
        && match &c.health {
            Some(Health::Healthy) => true,
            None => !d.needs_health,
            Some(_) => false,
        }
}
