//! The run lease: which flow run owns the host, safe across controllers (two ansible-playbook
//! runs, two operators, AWX and a shell).
//!
//! How liveness is decided, on the host alone (a controller's process cannot be seen from it):
//! - a run is **live** while any refit module holds the state lock (a phase is working now), or
//!   when a module last released it less than `grace` ago (the gap between two phases of one
//!   run is a controller round trip, well under a second);
//! - a lease whose host has been quiet for `grace` belongs to an **interrupted** run: the next
//!   run of the same flow and stream takes it over and resumes; a run of another flow or
//!   stream is refused until it is finished or abandoned.
//!
//! `begin` decides under the state lock, so two controllers cannot both take the lease;
//! `finish` and `abandon` act only on their own run's lease.

use super::FlowError;
use crate::state::{Lock, StateDir, StateError, read_json, write_json};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

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
}

pub struct Leases {
    state: StateDir,
    path: PathBuf,
}

/// What `begin` found.
#[derive(Debug, PartialEq)]
pub enum Taken {
    /// No lease was held: this run's is new.
    Fresh,
    /// This run's own lease (a repeated begin).
    Own,
    /// An interrupted run's lease, now this run's.
    Resumed { from: String },
}

impl Leases {
    pub fn new(state: &StateDir) -> Self {
        Leases {
            state: state.clone(),
            path: state.lease_file(),
        }
    }

    pub fn path(&self) -> &PathBuf {
        &self.path
    }

    pub fn read(&self) -> Result<Option<Lease>, StateError> {
        read_json(&self.path)
    }

    /// Takes the state lock for a decision about the lease; a module at work refuses it, by name.
    pub fn lock(&self, run_id: &str) -> Result<Lock, FlowError> {
        self.state
            .lock(&format!("flow_state {run_id}"))
            .map_err(|e| match e {
                StateError::Lock(crate::state::LockError::Held { holder, .. }) => {
                    FlowError::Busy { holder }
                }
                other => other.into(),
            })
    }

    /// How long ago a module last held the state lock, read before this run takes it.
    pub fn quiet_for(&self) -> Option<Duration> {
        let m = self
            .state
            .lock_file()
            .symlink_metadata()
            .ok()?
            .modified()
            .ok()?;
        Some(
            SystemTime::now()
                .duration_since(m)
                .unwrap_or(Duration::ZERO),
        )
    }

    /// Decides whether `run_id` may take the lease for `flow` to `stream`. `quiet` is how long
    /// the host has been without a module at work.
    pub fn decide(
        &self,
        held: Option<&Lease>,
        flow: &str,
        stream: &str,
        run_id: &str,
        quiet: Option<Duration>,
        grace: Duration,
    ) -> Result<Taken, FlowError> {
        let Some(l) = held else {
            return Ok(Taken::Fresh);
        };
        if l.run_id == run_id {
            return Ok(Taken::Own);
        }
        let leased = || FlowError::Leased {
            flow: l.flow.clone(),
            stream: l.stream.clone(),
            run_id: l.run_id.clone(),
            started_at: l.started_at.clone(),
            path: self.path.clone(),
        };
        if l.flow != flow || l.stream != stream {
            return Err(leased());
        }
        match quiet {
            Some(q) if q < grace => Err(FlowError::Live {
                run_id: l.run_id.clone(),
                started_at: l.started_at.clone(),
                quiet_secs: q.as_secs(),
                grace_secs: grace.as_secs(),
            }),
            _ => Ok(Taken::Resumed {
                from: l.run_id.clone(),
            }),
        }
    }

    pub fn write(&self, lease: &Lease) -> Result<(), StateError> {
        self.state.ensure("")?;
        write_json(&self.path, lease, 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(flow: &str, stream: &str, run_id: &str) -> Lease {
        Lease {
            flow: flow.into(),
            stream: stream.into(),
            from_stream: None,
            run_id: run_id.into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            resumed_from: Vec::new(),
        }
    }

    #[test]
    fn a_live_run_of_the_same_flow_is_refused_and_a_quiet_one_resumed() {
        let d = tempfile::tempdir().expect("tmp");
        let leases = Leases::new(&StateDir::new(d.path()));
        let held = lease("update", "1.0", "run-a");
        let grace = Duration::from_secs(20);
        let live = leases.decide(
            Some(&held),
            "update",
            "1.0",
            "run-b",
            Some(Duration::from_secs(1)),
            grace,
        );
        let msg = live.expect_err("live").to_string();
        assert!(msg.contains("run-a") && msg.contains("1 s ago"), "{msg}");
        let quiet = leases.decide(
            Some(&held),
            "update",
            "1.0",
            "run-b",
            Some(Duration::from_secs(21)),
            grace,
        );
        assert_eq!(
            quiet.expect("resumed"),
            Taken::Resumed {
                from: "run-a".into()
            }
        );
    }

    #[test]
    fn another_flow_is_refused_however_quiet_and_the_own_lease_is_own() {
        let d = tempfile::tempdir().expect("tmp");
        let leases = Leases::new(&StateDir::new(d.path()));
        let held = lease("upgrade", "1.1", "run-a");
        let other = leases.decide(Some(&held), "update", "1.0", "run-b", None, Duration::ZERO);
        assert!(matches!(other, Err(FlowError::Leased { .. })));
        let own = leases.decide(Some(&held), "upgrade", "1.1", "run-a", None, Duration::ZERO);
        assert_eq!(own.expect("own"), Taken::Own);
        assert_eq!(
            leases
                .decide(None, "update", "1.0", "run-b", None, Duration::ZERO)
                .expect("fresh"),
            Taken::Fresh
        );
    }
}
