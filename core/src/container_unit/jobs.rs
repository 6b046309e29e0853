//! The steps applying a plan and rolling it back share: stopping services, queuing a job and
//! waiting for the service to converge on a revision, writing a unit's text and recording a
//! revision that ran.

use super::target::{Desired, Target};
use super::{Host, Settings, UnitError};
use crate::converge::{Converged, Expectation, WaitError, wait_converged_serving};
use crate::state::{RevisionRecord, atomic_write};
use crate::systemd::Job;
use crate::time::now_rfc3339;

/// The host and the run's settings: what queuing and waiting for a job take.
#[derive(Clone, Copy)]
pub struct Jobs<'a> {
    pub host: &'a Host<'a>,
    pub settings: &'a Settings,
}

impl Jobs<'_> {
    pub fn stop_all(&self, services: &[String]) -> Result<(), UnitError> {
        for svc in services {
            self.host
                .systemd
                .run_job(Job::Stop, std::slice::from_ref(svc))?;
        }
        Ok(())
    }

    /// Queues a job and returns the invocation that ran before it: only a different one can
    /// be the new revision.
    pub fn begin(&self, service: &str, job: Job) -> Result<String, UnitError> {
        let units = [service.to_string()];
        self.host.systemd.reset_failed(&units)?;
        let mut status = self.host.systemd.show(&units)?.into_iter().next();
        let mut job = job;
        if status.as_ref().is_some_and(in_transition) {
            // systemd is starting or stopping the unit on its own (a crash-loop restart, or
            // the start after one). A start would join that start, whose invocation began
            // before this job and so never looks new; a restart would run beside it and pass
            // for a crash loop. Stop it first, and start it afresh.
            self.host.systemd.run_job(Job::Stop, &units)?;
            status = self.host.systemd.show(&units)?.into_iter().next();
            job = Job::Start;
        } else if job == Job::Start
            && status
                .as_ref()
                .is_some_and(|st| st.active_state() == "active")
        {
            // Started since it was observed (systemd's own restart): a start of a unit that
            // runs changes nothing, so no new invocation would ever come.
            job = Job::Restart;
        }
        let previous = status
            .map(|st| st.invocation_id().to_string())
            .unwrap_or_default();
        self.host.systemd.enqueue(job, &units)?;
        Ok(previous)
    }

    /// Waits for the service to converge on `d`; `serving` is told the first time it serves.
    pub fn wait(
        &self,
        service: &str,
        d: &Desired,
        image_id: Option<String>,
        previous: String,
        serving: &dyn Fn(),
    ) -> Result<Converged, WaitError> {
        let exp = Expectation {
            service: service.to_string(),
            revision: d.revision.clone(),
            image_id: image_id.unwrap_or_default(),
            needs_health: d.needs_health,
            runs_container: d.kind.runs_container(),
            previous_invocation: Some(previous).filter(|p| !p.is_empty()),
            min_healthy: self.settings.min_healthy,
            timeout: self.settings.timeout,
        };
        let h = self.host;
        wait_converged_serving(h.systemd, h.podman, h.clock, &exp, serving)
    }
}

/// Whether systemd has a start or stop of the unit under way that refit did not ask for.
fn in_transition(st: &crate::systemd::UnitStatus) -> bool {
    st.get("SubState") == "auto-restart"
        || matches!(
            st.active_state(),
            "activating" | "deactivating" | "reloading"
        )
}

/// Writes a unit file atomically, creating its directory.
pub fn write_unit(t: &Target, text: &str) -> Result<(), crate::state::StateError> {
    if let Some(dir) = t.path.parent() {
        std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
    }
    atomic_write(&t.path, text.as_bytes(), 0o644)
}

/// The record of a revision that ran (or, for a unit that runs no container, was written).
pub fn record(d: &Desired, image_id: Option<String>) -> RevisionRecord {
    RevisionRecord {
        revision: d.revision.clone(),
        text: d.text(),
        image_ref: d.image_ref(),
        image_id,
        recorded_at: now_rfc3339(),
        stream: None,
    }
}
