use super::*;
use crate::converge::{Converged, Expectation, WaitError, wait_converged};
use crate::podman::{ContainerInfo, ContainerState};
use crate::testing::{FakeClock, FakePodman, FakeSystemd};

fn shell(cmd: &str) -> Vec<String> {
    vec!["CMD-SHELL".into(), cmd.into()]
}

/// A podman whose one container, of `a.service`, runs the wanted revision with `health`.
fn podman(health: Option<Health>, test: Vec<String>, rcs: Vec<i64>) -> FakePodman {
    let mut p = FakePodman {
        containers: vec![ContainerInfo {
            id: "c1".into(),
            image_id: "img".into(),
            revision: Some("rev".into()),
            unit: "a.service".into(),
            state: ContainerState::Running,
            health,
            started_at: 0,
        }],
        ..FakePodman::default()
    };
    p.health.test = test;
    p.health.probe_rcs = std::sync::Mutex::new(rcs);
    p
}

/// A health-gated wait on `a.service`, whose new invocation is active from the first look.
fn wait(podman: &FakePodman, clock: &FakeClock) -> Result<Converged, WaitError> {
    let exp = Expectation {
        service: "a.service".into(),
        revision: "rev".into(),
        image_id: "img".into(),
        needs_health: true,
        runs_container: true,
        previous_invocation: Some("old".into()),
        min_healthy: Duration::from_secs(1),
        timeout: Duration::from_secs(30),
    };
    wait_converged(
        &FakeSystemd::with_active("a.service", "new"),
        podman,
        clock,
        &exp,
    )
}

#[test]
fn a_starting_container_whose_probe_passes_is_checked_once_and_converges() {
    let p = podman(
        Some(Health::Starting),
        shell("test -f /ready"),
        vec![1, 1, 0],
    );
    let clock = FakeClock::default();
    let c = wait(&p, &clock).expect("converged once podman ran its check");
    assert_eq!(c.container_id, "c1");
    // Three probes 250 ms apart, then min_healthy of 1 s: far from podman's next timer check.
    assert!(c.waited < Duration::from_secs(2), "{:?}", c.waited);
    assert_eq!(*p.health.recorded_checks.lock().expect("checks"), ["c1"]);
    let probes = p.health.probes.lock().expect("probes");
    assert_eq!(probes.len(), 3);
    assert_eq!(probes[0].1, ["/bin/sh", "-c", "test -f /ready"]);
}

#[test]
fn failing_probes_never_ask_for_the_recorded_check() {
    let p = podman(Some(Health::Starting), shell("false"), vec![1]);
    let clock = FakeClock::default();
    let msg = wait(&p, &clock).expect_err("never healthy").to_string();
    assert!(msg.contains("health starting"), "{msg}");
    assert!(p.health.recorded_checks.lock().expect("checks").is_empty());
    // At most one probe per 250 ms of the 30 s wait.
    let n = p.health.probed();
    assert!((2..=121).contains(&n), "{n} probes");
}

#[test]
fn the_look_whose_probe_passed_answers_what_podman_said_after_its_check() {
    let p = podman(Some(Health::Starting), shell("test -f /ready"), vec![1, 0]);
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
    assert_eq!(probe.look(&p, &clock, "c1", &Health::Starting), None);
    clock.sleep(SPACING);
    assert_eq!(
        probe.look(&p, &clock, "c1", &Health::Starting),
        Some(Health::Healthy)
    );
    clock.sleep(SPACING);
    assert_eq!(
        probe.look(&p, &clock, "c1", &Health::Starting),
        None,
        "asked once"
    );
}

#[test]
fn probes_are_spaced_by_at_least_250_ms() {
    let p = podman(None, shell("false"), vec![1]);
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
    let mut times = Vec::new();
    for _ in 0..300 {
        let before = p.health.probed();
        probe.look(&p, &clock, "c1", &Health::Starting);
        if p.health.probed() > before {
            times.push(clock.now());
        }
        clock.sleep(Duration::from_millis(10));
    }
    assert!(times.len() >= 10, "{} probes in 3 s", times.len());
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= SPACING, "{:?}", pair[1] - pair[0]);
    }
}

#[test]
fn no_probe_without_a_check_or_once_podman_called_it_healthy_or_unhealthy() {
    let clock = FakeClock::default();
    let deadline = clock.now() + Duration::from_secs(10);
    let without = podman(None, Vec::new(), vec![0]);
    let mut probe = HealthProbe::until(deadline);
    for _ in 0..5 {
        probe.look(&without, &clock, "c1", &Health::Starting);
        clock.sleep(SPACING);
    }
    assert_eq!(without.health.probed(), 0);
    let with = podman(None, shell("true"), vec![0]);
    let mut probe = HealthProbe::until(deadline);
    for health in [
        Health::Healthy,
        Health::Unhealthy,
        Health::Other("x".into()),
    ] {
        probe.look(&with, &clock, "c1", &health);
        clock.sleep(SPACING);
    }
    assert_eq!(with.health.probed(), 0);
    // A wait on a container without a health status never probes either.
    let none = podman(None, shell("true"), vec![0]);
    wait(&none, &FakeClock::default()).expect_err("no status");
    assert_eq!(none.health.probed(), 0);
}

#[test]
fn a_probe_that_hangs_is_not_run_again_and_none_runs_past_the_deadline() {
    let mut p = podman(None, shell("sleep 1000"), vec![0]);
    p.health.probe_hangs = true;
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
    for _ in 0..5 {
        probe.look(&p, &clock, "c1", &Health::Starting);
        clock.sleep(SPACING);
    }
    assert_eq!(p.health.probed(), 1);
    // A new container (the service restarted) is probed afresh.
    probe.look(&p, &clock, "c2", &Health::Starting);
    assert_eq!(p.health.probed(), 2);

    let late = podman(None, shell("true"), vec![1]);
    let mut probe = HealthProbe::until(clock.now());
    probe.look(&late, &clock, "c1", &Health::Starting);
    assert_eq!(late.health.probed(), 0);
}

#[test]
fn health_tests_become_argv_and_unknown_forms_are_refused() {
    let argv = |t: &[&str]| {
        let t: Vec<String> = t.iter().map(|s| s.to_string()).collect();
        health_argv("c1", &t)
    };
    assert_eq!(
        argv(&["CMD", "wget", "-q", "x"]).expect("cmd"),
        Some(vec!["wget".into(), "-q".into(), "x".into()])
    );
    assert_eq!(
        argv(&["CMD-SHELL", "a && b"]).expect("shell"),
        Some(vec!["/bin/sh".into(), "-c".into(), "a && b".into()])
    );
    assert_eq!(argv(&[]).expect("none"), None);
    assert_eq!(argv(&["NONE"]).expect("none"), None);
    let e = argv(&["wget", "x"]).expect_err("unknown");
    assert!(e.to_string().contains("c1"), "{e}");
    assert!(argv(&["CMD"]).is_err());
}
