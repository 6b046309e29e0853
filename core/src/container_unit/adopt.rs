//! A revision found serving that this run did not restart, though refit has not recorded it as
//! one that ran: started by `run_migrations` right after its migration (`start_after`), or by
//! a run killed before it recorded. Seen converged (every service active, its container on the
//! desired text and image, healthy where it has a health check), it is recorded now; otherwise
//! the revision before it would stay the one a rollback returns to.

use super::apply::{Work, record};
use super::observe::ServiceObs;
use super::target::Desired;
use crate::plan::Wanted;
use crate::podman::Health;
use crate::state::{RevisionRecord, StateDir, StateError};

/// Records, for every unchanged target wanted started, the revision it was seen converged on,
/// where refit's history has another as the last that ran.
pub fn record_converged(state: &StateDir, work: &[Work]) -> Result<(), StateError> {
    for (t, obs, plan, _) in work {
        if plan.changes() || t.wanted != Wanted::Started {
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
