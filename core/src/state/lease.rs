//! The run lease as it is kept on the host (`STATE_DIR/flow-lease.json`): which flow run owns
//! the host, and that run's heartbeat. Each module call a run makes names the run, and renews
//! the heartbeat as it lets go of the state lock; a call that names no run (status, check mode,
//! an ad-hoc call) never touches it, and a call naming another run is refused.
//!
//! What a lease means (live, interrupted, ended) is decided in flow/lease.rs.

use super::{Lock, StateDir, StateError, read_json, write_json};
use crate::time::{BootTime, Clock};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The `run_id` option of the modules a flow calls after its `begin`.
pub const RUN_ID_DOC: &str = "The flow run this call is part of, as M(refit.containers.flow_state) returned it in RV(refit.containers.flow_state#module:run_id). The call is refused when another run holds the run lease, and renews this run's heartbeat when it is done.\nLeave it out outside a flow: such a call never keeps a run alive.";

/// The lease an unfinished run holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lease {
    pub flow: String,
    pub stream: String,
    pub from_stream: Option<String>,
    pub run_id: String,
    pub started_at: String,
    /// Runs that took this lease over from an interrupted one, oldest first.
    #[serde(default)]
    pub resumed_from: Vec<String>,
    /// When the run last showed it was alive. A lease written before heartbeats has none, and
    /// so counts as from another boot.
    #[serde(default)]
    pub heartbeat: Heartbeat,
    /// Set when the run ended without letting go of the host: its recovery failed. The run
    /// does nothing more, so the next run of its flow and stream resumes it at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// A moment on the boot clock (time.rs), as a lease keeps it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Heartbeat {
    pub boot_id: String,
    pub since_boot_ms: u64,
}

impl From<&BootTime> for Heartbeat {
    fn from(t: &BootTime) -> Self {
        Heartbeat {
            boot_id: t.boot_id.clone(),
            since_boot_ms: u64::try_from(t.since_boot.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl StateDir {
    pub fn read_lease(&self) -> Result<Option<Lease>, StateError> {
        read_json(&self.lease_file())
    }

    pub fn write_lease(&self, lease: &Lease) -> Result<(), StateError> {
        self.ensure("")?;
        write_json(&self.lease_file(), lease, 0o600)
    }

    /// The state lock for one module call. With `run`, the call is that run's: it is refused
    /// when another run holds the lease, and renews the run's heartbeat when it lets go.
    pub fn lock_for_run<'a>(
        &self,
        holder: &str,
        run: Option<&str>,
        clock: &'a dyn Clock,
    ) -> Result<RunLock<'a>, StateError> {
        let lock = self.lock(holder)?;
        if let Some(run_id) = run
            && let Some(held) = self.read_lease()?
            && held.run_id != run_id
        {
            return Err(StateError::NotLeaseHolder {
                path: self.lease_file(),
                holder: held.run_id,
                run_id: run_id.to_string(),
            });
        }
        Ok(RunLock {
            renew: run.map(|run_id| Renewal {
                path: self.lease_file(),
                run_id: run_id.to_string(),
                clock,
            }),
            _lock: lock,
        })
    }
}

/// The state lock, held for a run's module call.
pub struct RunLock<'a> {
    renew: Option<Renewal<'a>>,
    // Declared last, so it is dropped after the heartbeat is written: no other module can
    // read the lease in between.
    _lock: Lock,
}

struct Renewal<'a> {
    path: PathBuf,
    run_id: String,
    clock: &'a dyn Clock,
}

impl Renewal<'_> {
    fn renew(&self) -> Result<(), StateError> {
        let Some(mut lease) = read_json::<Lease>(&self.path)? else {
            return Ok(());
        };
        if lease.run_id != self.run_id {
            return Ok(());
        }
        lease.heartbeat = Heartbeat::from(&self.clock.boot_time()?);
        write_json(&self.path, &lease, 0o600)
    }
}

impl Drop for RunLock<'_> {
    fn drop(&mut self) {
        // The end of a call's work is its run's last sign of life: the gap to the run's next
        // phase is measured from here, not from when a long phase began. A failure cannot be
        // reported any more (the call's result is out); it leaves the heartbeat older, which
        // only lets a later run take over sooner.
        if let Some(r) = &self.renew {
            let _ = r.renew();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeClock;
    use std::time::Duration;

    fn lease(run_id: &str, clock: &FakeClock) -> Lease {
        Lease {
            flow: "update".into(),
            stream: "1.0".into(),
            from_stream: None,
            run_id: run_id.into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            resumed_from: Vec::new(),
            heartbeat: Heartbeat::from(&clock.boot_time().expect("boot time")),
            ended_at: None,
        }
    }

    #[test]
    fn only_the_runs_own_calls_renew_its_heartbeat() {
        let d = tempfile::tempdir().expect("tmp");
        let state = StateDir::new(d.path());
        let clock = FakeClock::default();
        let taken = lease("run-a", &clock);
        state.write_lease(&taken).expect("write");
        clock.sleep(Duration::from_secs(30));
        // A call that names no run (status, check mode, an ad-hoc call) works, renewing nothing.
        drop(
            state
                .lock_for_run("container_unit web", None, &clock)
                .expect("lock"),
        );
        assert_eq!(state.read_lease().expect("read"), Some(taken.clone()));
        // Another run's call is refused, before it does anything, and renews nothing either.
        let err = state
            .lock_for_run("container_unit web", Some("run-b"), &clock)
            .err()
            .expect("another run's call is refused");
        assert!(err.to_string().contains("belongs to run run-a"), "{err}");
        assert_eq!(state.read_lease().expect("read"), Some(taken.clone()));
        // The run's own call renews it when it lets go.
        let own = state
            .lock_for_run("container_unit web", Some("run-a"), &clock)
            .expect("own");
        clock.sleep(Duration::from_secs(5));
        drop(own);
        let renewed = state.read_lease().expect("read").expect("held");
        assert_eq!(
            renewed.heartbeat.since_boot_ms,
            taken.heartbeat.since_boot_ms + 35_000
        );
    }

    #[test]
    fn a_run_without_a_lease_is_not_refused_and_writes_none() {
        let d = tempfile::tempdir().expect("tmp");
        let state = StateDir::new(d.path());
        let clock = FakeClock::default();
        drop(
            state
                .lock_for_run("run_migrations", Some("run-a"), &clock)
                .expect("lock"),
        );
        assert_eq!(state.read_lease().expect("read"), None);
    }
}
