use super::*;
use crate::converge::{Converged, Expectation, WaitError, wait_converged};
use crate::podman::{ContainerInfo, ContainerState};
use crate::testing::health::Call;
use crate::testing::{FakeClock, FakePodman, FakeSystemd};
use std::sync::{Arc, Mutex};

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
fn a_pass_taken_leaves_the_recorded_check_to_the_next_look_without_one() {
    let p = podman(Some(Health::Starting), shell("test -f /ready"), vec![0]);
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
    probe.take_a_pass(true);
    assert_eq!(probe.look(&p, &clock, "c1", &Health::Starting), None);
    assert!(probe.passed());
    clock.sleep(SPACING);
    assert_eq!(probe.look(&p, &clock, "c1", &Health::Starting), None);
    assert!(p.health.recorded_checks.lock().expect("checks").is_empty());
    assert_eq!(p.health.probed(), 1, "a pass is not probed again");
    probe.take_a_pass(false);
    assert_eq!(
        probe.look(&p, &clock, "c1", &Health::Starting),
        Some(Health::Healthy),
        "the next look asks for podman's check at once"
    );
    assert!(!probe.passed());
    assert_eq!(*p.health.recorded_checks.lock().expect("checks"), ["c1"]);
    assert_eq!(p.health.probed(), 1);
    // A restarted container is probed afresh: its pass is its own, not the old one's.
    probe.take_a_pass(true);
    assert_eq!(probe.look(&p, &clock, "c2", &Health::Starting), None);
    assert!(probe.passed());
    assert_eq!(p.health.probed(), 2, "c2 was probed itself");
}

#[test]
fn probes_come_250_ms_apart_at_first_then_back_off_up_to_2_s() {
    let p = podman(None, shell("false"), vec![1]);
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(60));
    let mut times = Vec::new();
    for _ in 0..3000 {
        let before = p.health.probed();
        probe.look(&p, &clock, "c1", &Health::Starting);
        if p.health.probed() > before {
            times.push(clock.now());
        }
        clock.sleep(Duration::from_millis(10));
    }
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let step = Duration::from_millis(10);
    // The first probes come as often as ever: a service ready in a second is seen at once.
    for gap in &gaps[..FAST_PROBES as usize - 1] {
        assert!(*gap >= SPACING && *gap <= SPACING + step, "{gaps:?}");
    }
    // Then each gap is longer than the last, up to the cap, and stays there.
    for pair in gaps.windows(2) {
        assert!(pair[1] + step >= pair[0], "{gaps:?}");
    }
    assert!(gaps.iter().all(|g| *g <= MAX_SPACING + step), "{gaps:?}");
    assert!(gaps.last().is_some_and(|g| *g >= MAX_SPACING), "{gaps:?}");
    // Half a minute of booting costs 25 exec sessions, not 120.
    assert_eq!(times.len(), 25, "{gaps:?}");
}

#[test]
fn the_spacing_grows_by_half_after_the_first_probes() {
    let ms: Vec<u128> = (1..=16).map(|n| spacing(n).as_millis()).collect();
    assert_eq!(
        ms,
        [
            250, 250, 250, 250, 250, 250, 250, 250, 375, 562, 843, 1265, 1898, 2000, 2000, 2000
        ]
    );
}

#[test]
fn a_container_is_probed_at_most_120_times_in_a_wait() {
    let p = podman(None, shell("false"), vec![1]);
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(3600));
    for _ in 0..1000 {
        probe.look(&p, &clock, "c1", &Health::Starting);
        clock.sleep(MAX_SPACING);
    }
    assert_eq!(p.health.probed(), MAX_PROBES as usize);
    // Another container of the service is probed afresh.
    probe.look(&p, &clock, "c2", &Health::Starting);
    assert_eq!(p.health.probed(), MAX_PROBES as usize + 1);
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
    p.health.hang = vec![Call::Exec];
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

/// A probe of c1, whose check has `retries` and podman's streak `streak`, that passes while
/// podman's own run of the check fails: what the look answers, and the checks asked for.
fn passing_probe_failing_check(retries: u32, streak: u32) -> (Option<Health>, Vec<String>) {
    let mut p = podman(Some(Health::Starting), shell("test -f /ready"), vec![0]);
    p.health.retries = retries;
    *p.health.streak.lock().expect("streak") = streak;
    p.health.recorded_check_fails = true;
    let clock = FakeClock::default();
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
    let after = probe.look(&p, &clock, "c1", &Health::Starting);
    let checks = p.health.recorded_checks.lock().expect("checks").clone();
    (after, checks)
}

#[test]
fn a_recorded_check_whose_failing_would_turn_the_container_unhealthy_is_never_asked_for() {
    // One failure short of `Retries`: podman's timer decides, never refit.
    assert_eq!(passing_probe_failing_check(3, 2), (None, vec![]));
    assert_eq!(passing_probe_failing_check(2, 1), (None, vec![]));
    // A check that fails at once (HealthRetries=1, or none recorded) is not even probed.
    for retries in [0, 1] {
        let mut p = podman(Some(Health::Starting), shell("true"), vec![0]);
        p.health.retries = retries;
        let clock = FakeClock::default();
        let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
        for _ in 0..5 {
            probe.look(&p, &clock, "c1", &Health::Starting);
            clock.sleep(SPACING);
        }
        assert_eq!(p.health.probed(), 0, "retries {retries}");
    }
    // With room to spare, the check is asked for; its failing counts, but is not unhealthy.
    assert_eq!(
        passing_probe_failing_check(3, 1),
        (Some(Health::Starting), vec!["c1".to_string()])
    );
}

#[test]
fn a_probe_is_bounded_by_the_checks_own_timeout() {
    let mut p = podman(Some(Health::Starting), shell("sleep 2"), vec![0]);
    let clock = Arc::new(FakeClock::default());
    p.health.clock = Some(clock.clone());
    p.health.check_timeout = Duration::from_secs(1);
    p.health.exec_takes = Duration::from_secs(2);
    let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(30));
    let began = clock.now();
    assert_eq!(probe.look(&p, &*clock, "c1", &Health::Starting), None);
    // podman's check would fail at 1 s: the probe gives up there, and asks for no check.
    assert_eq!(clock.now() - began, Duration::from_secs(1));
    assert!(p.health.recorded_checks.lock().expect("checks").is_empty());
}

#[test]
fn no_call_that_hangs_lets_a_probe_run_past_its_deadline() {
    for (hang, bound) in [
        (Call::Command, PROBE_TIMEOUT),
        (Call::Exec, Duration::from_secs(2)),
        (Call::Streak, Duration::from_secs(2)),
        (Call::Check, Duration::from_secs(2)),
    ] {
        let mut p = podman(Some(Health::Starting), shell("test -f /ready"), vec![0]);
        let clock = Arc::new(FakeClock::default());
        p.health.clock = Some(clock.clone());
        p.health.check_timeout = Duration::from_secs(2);
        p.health.exec_takes = Duration::from_millis(1500);
        p.health.hang = vec![hang];
        let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(30));
        let began = clock.now();
        assert_eq!(probe.look(&p, &*clock, "c1", &Health::Starting), None);
        let calls = p.health.calls.lock().expect("calls").clone();
        assert_eq!(clock.now() - began, bound, "{hang:?} hangs: {calls:?}");
        // A probe that ran to its deadline is the last of that container.
        clock.sleep(MAX_SPACING);
        let calls = p.health.calls.lock().expect("calls").len();
        probe.look(&p, &*clock, "c1", &Health::Starting);
        assert_eq!(
            p.health.calls.lock().expect("calls").len(),
            calls,
            "{hang:?}"
        );
    }
    // The wait's own deadline bounds a probe too.
    let mut p = podman(Some(Health::Starting), shell("sleep 1000"), vec![0]);
    let clock = Arc::new(FakeClock::default());
    p.health.clock = Some(clock.clone());
    p.health.hang = vec![Call::Exec];
    let mut probe = HealthProbe::until(clock.now() + Duration::from_millis(700));
    let began = clock.now();
    probe.look(&p, &*clock, "c1", &Health::Starting);
    assert_eq!(clock.now() - began, Duration::from_millis(700));
}

/// A podman whose every health call fails at once, not for a timeout.
struct Broken;

impl HealthProbes for Broken {
    fn health_command(&self, c: &str, _: Duration) -> Result<Option<HealthCommand>, ProbeError> {
        Err(ProbeError::Podman {
            container: c.to_string(),
            source: PodmanError::Api {
                call: "container inspect".into(),
                detail: "HTTP 500: boom".into(),
            },
        })
    }
}

#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_probe_warns_once_a_container_then_logs_at_debug() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    let clock = FakeClock::default();
    tracing::subscriber::with_default(subscriber, || {
        let mut probe = HealthProbe::until(clock.now() + Duration::from_secs(10));
        for container in ["c1", "c1", "c1", "c1", "c2", "c2"] {
            probe.look(&Broken, &clock, container, &Health::Starting);
            clock.sleep(SPACING);
        }
    });
    let text = String::from_utf8(logs.0.lock().expect("logs").clone()).expect("utf-8");
    let lines = |level: &str| {
        text.lines()
            .filter(|l| l.contains(level) && l.contains("HTTP 500"))
            .count()
    };
    assert_eq!(lines("WARN"), 2, "{text}");
    assert_eq!(lines("DEBUG"), 4, "{text}");
}
