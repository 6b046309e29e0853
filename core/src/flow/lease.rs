//! The run lease: which flow run owns the host, safe across controllers (two ansible-playbook
//! runs, two operators, AWX and a shell). The record and its heartbeat are state/lease.rs's;
//! this file decides what a lease found on the host means (docs/docsite/rst/lease.rst).
//!
//! Decided on the host alone, since a controller's process cannot be seen from it:
//! - **live**: a refit module holds the state lock (the flock dies with its process), or the
//!   run's own last module call let go of it less than `grace` ago, in this boot, on the boot
//!   clock. Only the run's own calls renew the heartbeat, so a status, a check or an ad-hoc call
//!   never keeps a dead run alive, and a wall-clock step changes nothing;
//! - **interrupted**: quiet for `grace`, or from another boot, or with a heartbeat ahead of the
//!   clock (not to be trusted): the next run of the same flow and stream resumes it;
//! - **ended**: the run said it does nothing more (its recovery failed), or the caller saw it
//!   end (refitctl, after its ansible-playbook exited): resumed at once, with no wait.
//!
//! A run of another flow or stream is refused by any lease: the host is half-way to somewhere.
//! A run that ends well, or fails with nothing touched, or is put back by its recovery, leaves
//! no lease at all. `begin` decides under the state lock, so two controllers cannot both take
//! the lease; `finish`, `end` and `abandon` act only on their own run's lease.

use super::{Context, FlowError, Params, Report};
use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::{Heartbeat, Lease, Lock, StateDir, StateError, remove_file};
use crate::time::BootTime;
use std::path::PathBuf;
use std::time::Duration;

pub struct Leases {
    state: StateDir,
    path: PathBuf,
}

/// What a lease held by another run means now.
#[derive(Debug, Clone, PartialEq)]
pub enum Liveness {
    /// Its last call let go of the state lock `quiet` ago, less than the grace.
    Live { quiet: Duration },
    /// Quiet for longer than the grace.
    Quiet(Duration),
    /// Its heartbeat is from another boot: the host restarted since.
    OtherBoot,
    /// Its heartbeat is ahead of this boot's clock, which cannot be: not trusted.
    Ahead,
    /// Its run said it ended, or the caller saw it end.
    Ended,
}

impl std::fmt::Display for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Liveness::Live { quiet } => write!(f, "last heard of {} s ago", quiet.as_secs()),
            Liveness::Quiet(q) => write!(f, "quiet for {} s", q.as_secs()),
            Liveness::OtherBoot => f.write_str("from an earlier boot"),
            Liveness::Ahead => f.write_str("its heartbeat ahead of the clock, so not trusted"),
            Liveness::Ended => f.write_str("which ended"),
        }
    }
}

/// What `begin` found.
#[derive(Debug, PartialEq)]
pub enum Taken {
    /// No lease was held: this run's is new.
    Fresh,
    /// This run's own lease (a repeated begin).
    Own,
    /// An interrupted or ended run's lease, now this run's.
    Resumed { from: String, found: Liveness },
}

/// How a lease is judged: the boot clock now, the grace, and the runs the caller saw end.
pub struct Judge<'a> {
    pub now: &'a BootTime,
    pub grace: Duration,
    pub ended_runs: &'a [String],
}

impl Judge<'_> {
    pub fn liveness(&self, l: &Lease) -> Liveness {
        if l.ended_at.is_some() || self.ended_runs.contains(&l.run_id) {
            return Liveness::Ended;
        }
        if l.heartbeat.boot_id != self.now.boot_id {
            return Liveness::OtherBoot;
        }
        let beat = Duration::from_millis(l.heartbeat.since_boot_ms);
        match self.now.since_boot.checked_sub(beat) {
            None => Liveness::Ahead,
            Some(quiet) if quiet < self.grace => Liveness::Live { quiet },
            Some(quiet) => Liveness::Quiet(quiet),
        }
    }
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
        self.state.read_lease()
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

    /// Decides whether the run `claim` names may take the lease.
    pub fn decide(
        &self,
        held: Option<&Lease>,
        claim: &Claim,
        judge: &Judge,
    ) -> Result<Taken, FlowError> {
        let Claim {
            flow,
            stream,
            run_id,
        } = *claim;
        let Some(l) = held else {
            return Ok(Taken::Fresh);
        };
        if l.run_id == run_id {
            return Ok(Taken::Own);
        }
        if l.flow != flow || l.stream != stream {
            return Err(FlowError::Leased {
                flow: l.flow.clone(),
                stream: l.stream.clone(),
                run_id: l.run_id.clone(),
                started_at: l.started_at.clone(),
                path: self.path.clone(),
            });
        }
        match judge.liveness(l) {
            Liveness::Live { quiet } => Err(FlowError::Live {
                run_id: l.run_id.clone(),
                started_at: l.started_at.clone(),
                quiet_secs: quiet.as_secs(),
                grace_secs: judge.grace.as_secs(),
            }),
            found => Ok(Taken::Resumed {
                from: l.run_id.clone(),
                found,
            }),
        }
    }

    pub fn write(&self, lease: &Lease) -> Result<(), StateError> {
        self.state.write_lease(lease)
    }

    /// Lets go of `run_id`'s own lease, under the state lock; another run's stays. Says
    /// whether there was one to let go of.
    pub fn release(&self, run_id: &str) -> Result<bool, FlowError> {
        let _lock = self.lock(run_id)?;
        match self.read()? {
            Some(l) if l.run_id == run_id => {
                remove_file(&self.path)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The end of a run that failed: with everything put back (`recovered`), its lease goes;
    /// otherwise it stays, marked as ended, so nothing else runs on a host in that state and
    /// the next run of the same flow resumes it at once.
    pub fn end(
        &self,
        run_id: &str,
        recovered: bool,
        inv: &Invocation,
    ) -> Result<Outcome, FlowError> {
        let _lock = self.lock(run_id)?;
        let Some(mut l) = self.read()?.filter(|l| l.run_id == run_id) else {
            return Ok(Outcome::new(false, format!("run {run_id} holds no lease")));
        };
        if inv.check_mode {
            return Ok(Outcome::new(false, "all checks passed"));
        }
        if recovered {
            remove_file(&self.path)?;
            return Ok(Outcome::new(
                true,
                format!("released the lease of run {run_id}: everything was put back"),
            ));
        }
        l.ended_at = Some(crate::time::now_rfc3339());
        self.write(&l)?;
        Ok(Outcome::new(
            true,
            format!(
                "run {run_id} keeps the lease {}, since its recovery failed: fix the cause, then run the {} to stream {} again, which resumes it at once",
                self.path.display(),
                l.flow,
                l.stream
            ),
        ))
    }
}

/// A run asking for the lease: its flow, the stream it goes to, and its ID.
pub struct Claim<'a> {
    pub flow: &'a str,
    pub stream: &'a str,
    pub run_id: &'a str,
}

/// The lease `take` wrote, and whether the host may have moved since the checks looked at it.
pub(super) struct Took {
    pub(super) taken: Taken,
    pub(super) moved: bool,
}

/// The decision again, under the lock: another controller may have taken the lease since it
/// was read. Then the archive is loaded and the lease written. Also says whether the host may
/// have moved since the checks looked at it: another module held the lock first, or an archive
/// was loaded.
pub(super) fn take(cx: &Context, host: &Host, report: &mut Report) -> Result<Took, FlowError> {
    let p = cx.p;
    let leases = &cx.leases;
    let lock = leases.lock(&cx.run_id)?;
    let moved = lock.waited() || p.image_archive.is_some();
    let held = leases.read()?;
    let now = host.clock.boot_time()?;
    let claim = Claim {
        flow: &cx.flow,
        stream: &cx.stream,
        run_id: &cx.run_id,
    };
    let taken = leases.decide(held.as_ref(), &claim, &judge(p, &now))?;
    if let Some(archive) = &p.image_archive {
        report.loaded_images = host.podman.load_archive(archive)?;
        super::checks::check_images(host, &p.images())?;
    }
    let mut resumed_from = held
        .as_ref()
        .map(|l| l.resumed_from.clone())
        .unwrap_or_default();
    if let Taken::Resumed { from, .. } = &taken {
        resumed_from.push(from.clone());
    }
    let l = Lease {
        flow: cx.flow.clone(),
        stream: cx.stream.clone(),
        from_stream: held
            .as_ref()
            .and_then(|l| l.from_stream.clone())
            .or(cx.recorded.clone()),
        run_id: cx.run_id.clone(),
        started_at: held
            .as_ref()
            .map_or_else(crate::time::now_rfc3339, |l| l.started_at.clone()),
        resumed_from,
        heartbeat: Heartbeat::from(&now),
        ended_at: None,
    };
    leases.write(&l)?;
    report.resumed = matches!(taken, Taken::Resumed { .. });
    drop(lock);
    Ok(Took { taken, moved })
}

/// How `begin` judges a lease held by another run, at `now` on the boot clock.
pub(super) fn judge<'a>(p: &'a Params, now: &'a BootTime) -> Judge<'a> {
    Judge {
        now,
        grace: Duration::from_secs(p.lease_grace),
        ended_runs: &p.ended_runs,
    }
}

/// Releases a lease an interrupted run left, on an operator's word.
pub(super) fn abandon(cx: &Context, inv: &Invocation) -> Result<Outcome, FlowError> {
    Ok(match &cx.lease {
        None => Outcome::new(false, "no lease is held"),
        // With a run_id, only that run's own lease is released, never another run's.
        Some(l) if cx.p.run_id.as_ref().is_some_and(|id| *id != l.run_id) => Outcome::new(
            false,
            format!(
                "the lease belongs to run {}, not this one; left as it is",
                l.run_id
            ),
        ),
        Some(l) => {
            // The texts the run staged are nothing to go forward to now; left, they would
            // keep the secrets they name from every prune.
            let stage = crate::state::is_plain_name(&l.flow).then(|| cx.state.stage(&l.flow));
            if !inv.check_mode {
                remove_file(cx.leases.path())?;
                if let Some(stage) = &stage {
                    remove_file(stage)?;
                }
            }
            Outcome::new(
                true,
                format!(
                    "released the lease of the unfinished {} to {}, and dropped its staged unit texts",
                    l.flow, l.stream
                ),
            )
        }
    })
}

/// A `begin` that failed after it took the lease, with nothing touched (no checkpoint of its
/// flow), ends its run: the lease goes, so the next run is neither refused nor told to wait.
pub(super) fn release_untouched(
    cx: &Context,
    out: Result<Outcome, FlowError>,
) -> Result<Outcome, FlowError> {
    let failed = out.as_ref().map_or(true, |o| o.failed);
    if !failed || cx.state.checkpoint(&cx.flow).exists() {
        return out;
    }
    match cx.leases.release(&cx.run_id) {
        Ok(_) => out,
        // Both are said: the failure, and the lease left behind with how to release it.
        Err(e) => {
            let (o, why) = match out {
                Ok(o) => {
                    let why = o.msg.clone();
                    (o, why)
                }
                Err(why) => (Outcome::default(), why.to_string()),
            };
            Ok(o.failed(format!(
                "{why}; nothing was touched, but the run's lease could not be released ({e}): release it with flow_state action=abandon run_id={}",
                cx.run_id
            )))
        }
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
