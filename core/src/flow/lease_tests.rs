//! Issue 35: the lease's decisions on the fake boot clock, without sleeping. Time passes by
//! `FakeClock::sleep`, a boot ends by `FakeClock::reboot`.

use super::*;
use crate::ansible::Invocation;
use crate::state::{Heartbeat, StateDir};
use crate::testing::FakeClock;
use crate::time::Clock;

const GRACE: Duration = Duration::from_secs(20);

struct Bed {
    _dir: tempfile::TempDir,
    state: StateDir,
    leases: Leases,
    clock: FakeClock,
}

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tmp");
        let state = StateDir::new(dir.path());
        Bed {
            leases: Leases::new(&state),
            state,
            _dir: dir,
            clock: FakeClock::default(),
        }
    }

    /// `run_id`'s update to 1.0 takes the lease now.
    fn take(&self, run_id: &str) -> Lease {
        let l = Lease {
            flow: "update".into(),
            stream: "1.0".into(),
            from_stream: None,
            run_id: run_id.into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            resumed_from: Vec::new(),
            heartbeat: Heartbeat::from(&self.clock.boot_time().expect("boot time")),
            ended_at: None,
        };
        self.leases.write(&l).expect("write");
        l
    }

    /// What `begin` of `run_id`'s `flow` to 1.0 decides now, the caller having seen `ended`
    /// end.
    fn decide(&self, flow: &str, run_id: &str, ended: &[String]) -> Result<Taken, FlowError> {
        let held = self.leases.read().expect("read");
        let now = self.clock.boot_time().expect("boot time");
        let judge = Judge {
            now: &now,
            grace: GRACE,
            ended_runs: ended,
        };
        let claim = Claim {
            flow,
            stream: "1.0",
            run_id,
        };
        self.leases.decide(held.as_ref(), &claim, &judge)
    }

    fn resumed(&self, run_id: &str, ended: &[String]) -> Liveness {
        match self.decide("update", run_id, ended) {
            Ok(Taken::Resumed { found, .. }) => found,
            other => panic!("expected a resume, got {other:?}"),
        }
    }
}

fn inv() -> Invocation {
    Invocation::default()
}

#[test]
fn a_run_is_live_within_the_grace_and_interrupted_after_it() {
    let bed = Bed::new();
    bed.take("run-a");
    bed.clock.sleep(Duration::from_secs(19));
    let err = bed.decide("update", "run-b", &[]).expect_err("live");
    let msg = err.to_string();
    assert!(
        matches!(err, FlowError::Live { quiet_secs: 19, .. }) && msg.contains("run run-a"),
        "{msg}"
    );
    bed.clock.sleep(Duration::from_secs(1));
    assert_eq!(bed.resumed("run-b", &[]), Liveness::Quiet(GRACE));
    assert_eq!(bed.decide("update", "run-a", &[]).expect("own"), Taken::Own);
}

#[test]
fn a_lease_from_a_dead_boot_is_interrupted_at_once() {
    let bed = Bed::new();
    bed.take("run-a");
    bed.clock.reboot();
    bed.clock.sleep(Duration::from_secs(1));
    assert_eq!(bed.resumed("run-b", &[]), Liveness::OtherBoot);
}

#[test]
fn a_heartbeat_ahead_of_the_boot_clock_is_not_trusted() {
    let bed = Bed::new();
    let mut l = bed.take("run-a");
    l.heartbeat.since_boot_ms += 3_600_000;
    bed.leases.write(&l).expect("write");
    assert_eq!(bed.resumed("run-b", &[]), Liveness::Ahead);
}

#[test]
fn only_the_runs_own_calls_keep_it_alive() {
    let bed = Bed::new();
    bed.take("run-a");
    // Every 5 s for a minute: a status or check (no run named), and a call of another run,
    // which is refused. Neither renews run-a's heartbeat.
    for _ in 0..12 {
        bed.clock.sleep(Duration::from_secs(5));
        drop(
            bed.state
                .lock_for_run("container_unit web", None, &bed.clock)
                .expect("status"),
        );
        assert!(
            bed.state
                .lock_for_run("container_unit web", Some("run-b"), &bed.clock)
                .is_err()
        );
    }
    assert_eq!(
        bed.resumed("run-b", &[]),
        Liveness::Quiet(Duration::from_secs(60))
    );
    // run-a's own call, as it lets go of the lock, makes it live again.
    drop(
        bed.state
            .lock_for_run("run_migrations", Some("run-a"), &bed.clock)
            .expect("own call"),
    );
    bed.clock.sleep(Duration::from_secs(3));
    assert!(matches!(
        bed.decide("update", "run-b", &[]),
        Err(FlowError::Live { quiet_secs: 3, .. })
    ));
}

#[test]
fn a_run_the_caller_saw_end_is_resumed_at_once() {
    let bed = Bed::new();
    bed.take("run-a");
    let seen = vec!["run-x".to_string(), "run-a".to_string()];
    assert_eq!(bed.resumed("run-b", &seen), Liveness::Ended);
    // A run of another flow is refused all the same: the host is half-way to somewhere.
    assert!(matches!(
        bed.decide("deploy", "run-b", &seen),
        Err(FlowError::Leased { .. })
    ));
}

#[test]
fn a_run_put_back_by_its_recovery_leaves_no_lease() {
    let bed = Bed::new();
    bed.take("run-a");
    // Another run's end is not this run's: run-a's lease stays.
    let Outcome { changed, msg, .. } = bed.leases.end("run-b", true, &inv()).expect("end");
    assert!(!changed && msg.contains("holds no lease"), "{msg}");
    let Outcome { changed, .. } = bed.leases.end("run-a", true, &inv()).expect("end");
    assert!(changed);
    assert_eq!(bed.leases.read().expect("read"), None);
    assert_eq!(
        bed.decide("deploy", "run-b", &[]).expect("fresh"),
        Taken::Fresh
    );
}

#[test]
fn a_failed_recovery_keeps_the_lease_marked_ended_and_says_what_to_run() {
    let bed = Bed::new();
    bed.take("run-a");
    let Outcome { changed, msg, .. } = bed.leases.end("run-a", false, &inv()).expect("end");
    assert!(changed);
    assert!(
        msg.contains("keeps the lease")
            && msg.contains("recovery failed")
            && msg.contains("run the update to stream 1.0 again"),
        "{msg}"
    );
    let kept = bed.leases.read().expect("read").expect("kept");
    assert!(kept.ended_at.is_some());
    // The same flow resumes it at once; any other is refused.
    assert_eq!(bed.resumed("run-b", &[]), Liveness::Ended);
    assert!(matches!(
        bed.decide("deploy", "run-b", &[]),
        Err(FlowError::Leased { .. })
    ));
}
