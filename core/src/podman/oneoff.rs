//! One-off containers (migrations, their checks and backups), in three phases so that a caller
//! can keep the slow parts out of a service's downtime:
//!
//! 1. `prepare`: sweep the unit's leftovers, then create the container and initialize it (the
//!    OCI runtime's create: conmon, namespaces, mounts), or adopt a leftover; it needs nothing
//!    stopped, so a migration prepares before it stops its services, and what is left to do
//!    while they are down is to start its process.
//! 2. `run`: start it (unless adopted) and wait with the deadline; on timeout kill it. Its
//!    output (its tail, bounded) is asked for apart, so that a migration starts its services
//!    again before it reads the log.
//! 3. `remove`: remove it, on success, failure and timeout alike; a migration removes it only
//!    after its services started again.
//!
//! `Podman::run_oneoff` composes the three; `Guard` removes a prepared container on every path.
//!
//! A run killed while its one-off ran leaves the container behind, still migrating. The next
//! run of the same command on the same image adopts it: waits for it and takes its exit as the
//! result, so a migration never runs twice side by side, nor twice in a row. Only a leftover
//! that was started is adopted: one a run left between its create and its start never runs
//! unless started, and waiting on it would only end at the deadline; nor is one that a signal
//! ended (a power-off stopped it), whose exit is not the migration's, nor one whose exit podman
//! never recorded (the power went before conmon could). It is removed, as is any other
//! leftover of the unit, before a new one is created.
//!
//! The phases themselves speak to the API in `oneoff_api`.

use super::{Podman, PodmanError};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// What to run: the borrowed image, volumes, env and network of a service, and a command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneOff {
    pub image: String,
    pub command: Vec<String>,
    pub env: Vec<String>,
    /// `SOURCE:DEST[:OPTIONS]`, as `podman run -v` takes them.
    pub volumes: Vec<String>,
    pub network: Option<String>,
    pub labels: HashMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneOffResult {
    pub rc: i64,
    /// The last MAX_OUTPUT bytes of stdout and stderr, interleaved as the container wrote them.
    pub output: String,
    /// The container was a killed run's, of the same command and image, and this run waited
    /// for it instead of starting another.
    pub adopted: bool,
}

/// The label that groups a unit's one-off containers.
pub const SOURCE_LABEL: &str = "io.refit.migration";

impl OneOff {
    /// What makes two one-offs the same work: the image, the command, and the volumes it
    /// writes to. A backup's directory is new for each backup: a killed run's backup, into its
    /// own directory, is never taken for the next one's, whose directory would stay empty.
    pub(super) fn key(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.image.as_bytes());
        for w in &self.command {
            h.update([0]);
            h.update(w.as_bytes());
        }
        for v in &self.volumes {
            h.update([1]);
            h.update(v.as_bytes());
        }
        format!("{:x}", h.finalize())[..32].to_string()
    }
}

pub enum Finished {
    Exited(OneOffResult),
    TimedOut { output: String },
}

/// How a prepared one-off's run ended; its output is `Podman::oneoff_output`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited {
        rc: i64,
    },
    /// Killed at the deadline.
    TimedOut,
}

/// A one-off container ready to run: created by this run, or a killed run's, adopted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub id: String,
    /// A started leftover of the same work: it is waited for, never started again.
    pub adopted: bool,
    /// The exit an adopted leftover that had ended recorded: its answer, not waited for.
    pub recorded_exit: Option<i64>,
}

/// A prepared one-off that is removed when dropped, so that no early return, error or panic
/// between its prepare and its removal leaves the container behind. `remove` removes it at the
/// point the caller chooses, and reports how that went.
pub struct Guard<'a, P: Podman + ?Sized> {
    podman: &'a P,
    prepared: Prepared,
    removed: bool,
}

impl<'a, P: Podman + ?Sized> Guard<'a, P> {
    pub fn new(podman: &'a P, prepared: Prepared) -> Self {
        Guard {
            podman,
            prepared,
            removed: false,
        }
    }

    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    pub fn remove(mut self) -> Result<(), PodmanError> {
        self.removed = true;
        self.podman.remove_oneoff(&self.prepared)
    }
}

impl<P: Podman + ?Sized> Drop for Guard<'_, P> {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // Only reached on a path that already fails: its error is the one to report.
        if let Err(e) = self.podman.remove_oneoff(&self.prepared) {
            tracing::warn!(container = %self.prepared.id, error = %e, "one-off not removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_work_has_the_same_key_and_other_work_or_another_directory_another() {
        let a = OneOff {
            image: "img1".into(),
            command: vec!["/bin/migrate".into()],
            ..OneOff::default()
        };
        let mut b = a.clone();
        b.env.push("X=1".into());
        assert_eq!(a.key(), b.key());
        let c = OneOff {
            command: vec!["/bin/migrate".into(), "--check".into()],
            ..a.clone()
        };
        assert_ne!(a.key(), c.key());
        let into = |dir: &str| OneOff {
            volumes: vec![
                "db-data:/var/lib/postgresql".into(),
                format!("{dir}:/backup"),
            ],
            ..a.clone()
        };
        assert_eq!(into("/state/1").key(), into("/state/1").key());
        assert_ne!(into("/state/1").key(), into("/state/2").key());
    }
}
