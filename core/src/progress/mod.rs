//! Progress of a long module call, as it happens: a pull, a migration, a backup, a health wait.
//!
//! Code that may take long opens a `Step` (`step("pulling app:1.1", None)`) and drops it when
//! done. Inside a module call that may detach (ansible/detach.rs), each step becomes JSON lines
//! (`Event`): its begin, a tick every few seconds while it lasts, and its end; a `note` is one
//! line for a moment inside a step (a service started, its health check passed). Until the call
//! detaches they are held in memory; after, they go to the run dir's `events` file, which the
//! controller's action reads every quarter second (plugins/plugin_utils/progress_poll.py).
//! Anywhere else (a unit test, a call in check mode, refitctl) a step records nothing.
//!
//! An event holds what the code named (services, images, migrations) and times, never a
//! parameter's value, and is masked with the call's secrets all the same.

mod recorder;

pub use recorder::{Event, Kind, Recorder, TICK_EVERY};

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The call's recorder, when the call may detach; `None` records nothing.
static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);

/// The recorder of this process, locked. A panic while it was held (a bug elsewhere) leaves it
/// usable: events are a view, and the driver still answers.
pub fn recorder() -> MutexGuard<'static, Option<Recorder>> {
    RECORDER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A long piece of work, reported while it lasts; its end is reported when it is dropped.
#[must_use = "a step ends when it is dropped"]
pub struct Step {
    id: Option<u64>,
}

/// Opens a step named `what` ("migrating api"); `limit` is its deadline, shown beside the
/// elapsed time ("3 s of 60").
pub fn step(what: impl Into<String>, limit: Option<Duration>) -> Step {
    let id = recorder()
        .as_mut()
        .map(|r| r.begin(what.into(), limit, Instant::now()));
    Step { id }
}

/// One line for a moment seen inside a step ("api started"), shown as it is recorded.
pub fn note(what: impl Into<String>) {
    if let Some(r) = recorder().as_mut() {
        r.note(what.into(), Instant::now());
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let (Some(id), Some(r)) = (self.id, recorder().as_mut()) {
            r.end(id, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_outside_a_detachable_call_records_nothing() {
        // No unit test installs the recorder: a step is a no-op, and dropping it too.
        let s = step("pulling app:1", None);
        assert!(s.id.is_none());
        drop(s);
    }
}
