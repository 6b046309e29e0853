//! Waiting for convergence on fake hosts: crash loops, restarts systemd makes on its own,
//! health, timeouts, and the moment a service first serves.

use super::*;
use crate::podman::{ContainerInfo, ContainerState};
use crate::systemd::{Job, SystemdError, UnitStatus};
use crate::testing::{FakeClock, FakePodman};
use std::sync::Mutex;

/// systemd answering `show` from a script, one status per call, the last one repeated.
struct Scripted(Mutex<Vec<(&'static str, &'static str, &'static str)>>);

impl Systemd for Scripted {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        let mut script = self.0.lock().expect("script");
        let (inv, active, restarts) = if script.len() > 1 {
            script.remove(0)
        } else {
            script[0]
        };
        let props = [
            ("InvocationID", inv),
            ("ActiveState", active),
            ("SubState", "running"),
            ("NRestarts", restarts),
            // The job runs for as long as the previous invocation shows.
            ("Job", if inv == "old" { "42" } else { "" }),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Ok(vec![UnitStatus {
            name: units[0].clone(),
            props,
        }])
    }
    fn daemon_reload(&self) -> Result<(), SystemdError> {
        Ok(())
    }
    fn enqueue(&self, _: Job, _: &[String]) -> Result<(), SystemdError> {
        Ok(())
    }
    fn run_job(&self, _: Job, _: &[String]) -> Result<(), SystemdError> {
        Ok(())
    }
    fn reset_failed(&self, _: &[String]) -> Result<(), SystemdError> {
        Ok(())
    }
    fn journal_tail(&self, _: &str, _: usize) -> String {
        String::new()
    }
}

/// A fake podman with one running container `c1` of image `img` and `revision`.
fn running(revision: &str, health: Option<Health>) -> FakePodman {
    FakePodman {
        containers: vec![ContainerInfo {
            id: "c1".into(),
            image_id: "img".into(),
            revision: Some(revision.into()),
            unit: "a.service".into(),
            state: ContainerState::Running,
            health,
            started_at: 0,
        }],
        ..FakePodman::default()
    }
}

/// A wait for `a.service` on revision `rev` of image `img`, after the invocation `previous`.
fn expecting(previous: &str, needs_health: bool, min_healthy: Duration) -> Expectation {
    Expectation {
        service: "a.service".into(),
        revision: "rev".into(),
        image_id: "img".into(),
        needs_health,
        runs_container: true,
        previous_invocation: Some(previous.into()),
        min_healthy,
        timeout: Duration::from_secs(30),
    }
}

fn wait(script: Vec<(&'static str, &'static str, &'static str)>) -> Result<Converged, WaitError> {
    let podman = running("rev", None);
    let exp = expecting("old", false, Duration::from_secs(1));
    wait_converged(
        &Scripted(Mutex::new(script)),
        &podman,
        &FakeClock::default(),
        &exp,
    )
}

#[test]
fn a_restart_counter_that_systemd_resets_is_not_a_crash_loop() {
    let out = wait(vec![
        ("old", "active", "1"),
        ("new", "activating", "1"),
        ("new", "active", "0"),
    ]);
    assert_eq!(out.expect("converged").invocation_id, "new");
}

/// The rollback's restart met systemd's own restart of the unit, begun after the rollback's
/// text and image were in place: the job ends with that invocation running the wanted
/// revision, which converges without a new one and without waiting out the timeout.
#[test]
fn a_job_taken_in_by_a_start_of_the_wanted_revision_converges() {
    let (clock, real) = (FakeClock::default(), Instant::now());
    let start = clock.now();
    let podman = running("rev", None);
    let exp = expecting("systemds-own", false, Duration::from_secs(1));
    let systemd = Scripted(Mutex::new(vec![("systemds-own", "active", "3")]));
    let c = wait_converged(&systemd, &podman, &clock, &exp).expect("converged");
    assert_eq!(c.invocation_id, "systemds-own");
    assert!(
        clock.now() - start < Duration::from_secs(2),
        "not the timeout"
    );
    assert!(real.elapsed() < Duration::from_secs(1), "no real sleeps");
    // Another revision in that invocation is still waited for.
    let other = Expectation {
        revision: "next".into(),
        ..exp
    };
    let err = wait_converged(&systemd, &podman, &clock, &other).expect_err("waits");
    assert!(
        err.to_string().contains("still the previous invocation"),
        "{err}"
    );
}

/// `Scripted`, for a `Type=oneshot` service.
struct Oneshot(Scripted);

impl Systemd for Oneshot {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        let mut all = self.0.show(units)?;
        for st in &mut all {
            st.props.insert("Type".into(), "oneshot".into());
        }
        Ok(all)
    }
    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.0.daemon_reload()
    }
    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.0.enqueue(job, units)
    }
    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.0.run_job(job, units)
    }
    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        self.0.reset_failed(units)
    }
    fn journal_tail(&self, unit: &str, lines: usize) -> String {
        self.0.journal_tail(unit, lines)
    }
}

#[test]
fn a_oneshot_converges_when_its_new_run_ended_active_with_no_container_left() {
    let exp = Expectation {
        service: "m.service".into(),
        revision: "rev".into(),
        image_id: "img".into(),
        needs_health: false,
        runs_container: true,
        previous_invocation: Some("old".into()),
        min_healthy: Duration::ZERO,
        timeout: Duration::from_secs(30),
    };
    let clock = FakeClock::default();
    let start = clock.now();
    let script = vec![("new", "activating", "0"), ("new", "active", "0")];
    let systemd = Oneshot(Scripted(Mutex::new(script)));
    let c = wait_converged(&systemd, &FakePodman::default(), &clock, &exp).expect("ran");
    assert_eq!(c.invocation_id, "new");
    assert!(
        clock.now() - start < Duration::from_secs(1),
        "{:?}",
        c.waited
    );
}

#[test]
fn a_restart_counter_that_rises_is_a_crash_loop() {
    let out = wait(vec![("new", "active", "0"), ("new", "active", "1")]);
    let msg = out.expect_err("crash loop").to_string();
    assert!(msg.contains("NRestarts 0 -> 1"), "{msg}");
}

/// The wait on a container of `revision`, image `img` and `health`, behind a service that
/// shows a new invocation from the first look.
fn wait_on(
    revision: &str,
    health: Option<Health>,
    clock: &FakeClock,
) -> Result<Converged, WaitError> {
    wait_on_serving(revision, health, clock, &|| {})
}

fn wait_on_serving(
    revision: &str,
    health: Option<Health>,
    clock: &FakeClock,
    serving: &dyn Fn(),
) -> Result<Converged, WaitError> {
    let podman = running(revision, health);
    let exp = expecting("old", true, Duration::from_secs(2));
    let systemd = Scripted(Mutex::new(vec![("new", "active", "0")]));
    wait_converged_serving(&systemd, &podman, clock, &exp, serving)
}

#[test]
fn serving_is_told_once_at_the_first_healthy_look_before_the_hold_ends() {
    let clock = FakeClock::default();
    let start = clock.now();
    let told = Mutex::new(Vec::new());
    let c = wait_on_serving("rev", Some(Health::Healthy), &clock, &|| {
        told.lock().expect("told").push(clock.now() - start);
    })
    .expect("converged");
    let told = told.into_inner().expect("told");
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0] < Duration::from_millis(500), "{told:?}");
    assert!(c.waited >= Duration::from_secs(2), "{:?}", c.waited);
}

#[test]
fn a_service_that_never_serves_is_never_told_serving() {
    let clock = FakeClock::default();
    let told = std::sync::atomic::AtomicBool::new(false);
    let waited = wait_on_serving("rev", Some(Health::Starting), &clock, &|| {
        told.store(true, std::sync::atomic::Ordering::SeqCst)
    });
    assert!(waited.is_err());
    assert!(!told.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn a_healthy_revision_converges_once_it_stayed_healthy_for_min_healthy_time() {
    let (clock, real) = (FakeClock::default(), Instant::now());
    let start = clock.now();
    let c = wait_on("rev", Some(Health::Healthy), &clock).expect("converged");
    assert_eq!(c.container_id, "c1");
    assert!(c.waited >= Duration::from_secs(2), "{:?}", c.waited);
    assert!(c.waited < Duration::from_secs(3), "{:?}", c.waited);
    assert_eq!(clock.now() - start, c.waited);
    assert!(real.elapsed() < Duration::from_secs(1), "no real sleeps");
}

#[test]
fn another_revision_never_converges_and_the_wait_ends_at_its_timeout() {
    let (clock, real) = (FakeClock::default(), Instant::now());
    let start = clock.now();
    let msg = wait_on("other", Some(Health::Healthy), &clock)
        .expect_err("not converged")
        .to_string();
    assert!(msg.contains("not converged within 30 s"), "{msg}");
    assert!(
        msg.contains("container runs revision Some(\"other\")"),
        "{msg}"
    );
    assert!(clock.now() - start >= Duration::from_secs(30));
    assert!(real.elapsed() < Duration::from_secs(2), "no real sleeps");
}

#[test]
fn an_unhealthy_revision_fails_at_once_and_one_without_status_waits() {
    let clock = FakeClock::default();
    let start = clock.now();
    let msg = wait_on("rev", Some(Health::Unhealthy), &clock)
        .expect_err("unhealthy")
        .to_string();
    assert!(msg.contains("reports unhealthy"), "{msg}");
    assert_eq!(clock.now(), start, "judged on the first look");
    let msg = wait_on("rev", None, &clock)
        .expect_err("no status")
        .to_string();
    assert!(msg.contains("no health status yet"), "{msg}");
}
