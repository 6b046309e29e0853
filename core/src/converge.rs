//! Waiting for convergence, observed rather than assumed: a return from `systemctl restart`
//! is not convergence (a crashing image returns rc 0 with the default sdnotify).
//!
//! A started service has converged when a *new* invocation is active, its container carries the
//! desired revision label and image ID, it is healthy where it has a health check, and all of
//! that has held, with no restart, for `min_healthy`. It fails fast on a failed unit, a
//! scheduled auto-restart, a restart counter that moves, or an unhealthy container.

use crate::podman::{Health, Podman};
use crate::systemd::Systemd;
use crate::time::Clock;
use std::time::{Duration, Instant};

/// The longest pause between two looks.
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct Expectation {
    pub service: String,
    pub revision: String,
    pub image_id: String,
    pub needs_health: bool,
    /// The service runs a container refit labelled; a pod's, network's, volume's, image's or
    /// build's service has converged once its new invocation is active.
    pub runs_container: bool,
    /// The invocation that ran before the job; convergence needs a different one.
    pub previous_invocation: Option<String>,
    pub min_healthy: Duration,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converged {
    pub invocation_id: String,
    pub container_id: String,
    pub waited: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error("{service} did not converge: {why}")]
    NotConverged { service: String, why: String },
    #[error(transparent)]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error(transparent)]
    Podman(#[from] crate::podman::PodmanError),
}

pub fn wait_converged(
    systemd: &dyn Systemd,
    podman: &dyn Podman,
    clock: &dyn Clock,
    exp: &Expectation,
) -> Result<Converged, WaitError> {
    let start = clock.now();
    let waiting_for = if exp.needs_health {
        "be healthy"
    } else {
        "run"
    };
    let _step = crate::progress::step(
        format!("waiting for {} to {waiting_for}", exp.service),
        Some(exp.timeout),
    );
    let fail = |why: String| WaitError::NotConverged {
        service: exp.service.clone(),
        why,
    };
    let units = [exp.service.clone()];
    // The first new invocation and its restart count; any later change is a crash loop.
    let mut seen: Option<(String, u64)> = None;
    let mut healthy_since: Option<Instant> = None;
    // The moments shown as progress lines, each once: its start, its first health check passed.
    let mut noted_started = false;
    let mut noted_healthy = false;
    let mut last_state = String::from("not observed yet");
    let mut pauses = crate::poll::Backoff::up_to(POLL);
    let mut probe = crate::podman::HealthProbe::until(start + exp.timeout);
    loop {
        let now = clock.now();
        if now.duration_since(start) > exp.timeout {
            return Err(fail(format!(
                "not converged within {} s; last seen: {last_state}",
                exp.timeout.as_secs()
            )));
        }
        let st = systemd.show(&units)?.into_iter().next().unwrap_or_default();
        let invocation = st.invocation_id().to_string();
        last_state = format!("{}/{}", st.active_state(), st.get("SubState"));
        // Until a new invocation shows up, what systemd reports is the old one's story.
        if invocation.is_empty() || Some(&invocation) == exp.previous_invocation.as_ref() {
            // The job is over and nothing new runs: a dependency failed, or the start never
            // began. Waiting out the deadline would change nothing.
            if st.start_ended_down() {
                return Err(fail(crate::systemd::why_down(systemd, &st)));
            }
            // The job is over and the invocation it found runs the wanted revision and image:
            // systemd's own restart (Restart=on-failure) began it after the new text and image
            // were in place, and took the job in. Judged as it is, not waited out.
            if !(exp.runs_container
                && st.get("Job").is_empty()
                && st.active_state() == "active"
                && runs_wanted(podman, &units, exp)?)
            {
                last_state.push_str(", still the previous invocation");
                clock.sleep(pauses.pause());
                continue;
            }
        }
        match (st.active_state(), st.get("SubState")) {
            ("failed", _) => {
                return Err(fail(format!(
                    "the service failed (Result={})",
                    st.get("Result")
                )));
            }
            (_, "auto-restart") => {
                return Err(fail(format!(
                    "the container exited and systemd scheduled a restart (Result={}, NRestarts={})",
                    st.get("Result"),
                    st.n_restarts()
                )));
            }
            _ => {}
        }
        // A counter that drops is systemd resetting it for the new job (seen as 1 -> 0 just
        // after a restart out of an auto-restart loop); only a rise, or another invocation, is
        // a restart under watch.
        match &seen {
            Some((inv, n)) if *inv != invocation || st.n_restarts() > *n => {
                return Err(fail(format!(
                    "the service restarted while being watched (NRestarts {} -> {}): it is crash-looping",
                    n,
                    st.n_restarts()
                )));
            }
            _ => seen = Some((invocation.clone(), st.n_restarts())),
        }
        let mut good = st.active_state() == "active";
        if good && !noted_started {
            noted_started = true;
            crate::progress::note(format!("{} started", exp.service));
        }
        let mut container_id = String::new();
        // A oneshot's new invocation that became active ran its job to a good end (a failed
        // one would be failed); its container is gone, and there is no more to see.
        if good && exp.runs_container && !st.ran_once() {
            let containers = podman.unit_containers(&units)?;
            match containers.iter().find(|c| c.running()) {
                None => {
                    good = false;
                    last_state.push_str(", no running container");
                }
                Some(c) => {
                    container_id = c.id.clone();
                    if c.revision.as_deref() != Some(exp.revision.as_str()) {
                        good = false;
                        last_state.push_str(&format!(", container runs revision {:?}", c.revision));
                    } else if c.image_id != exp.image_id {
                        good = false;
                        last_state
                            .push_str(&format!(", container runs image {}", short(&c.image_id)));
                    } else if exp.needs_health {
                        match &c.health {
                            Some(Health::Healthy) => {
                                if !noted_healthy {
                                    noted_healthy = true;
                                    crate::progress::note(format!("{} healthy", exp.service));
                                }
                            }
                            Some(Health::Unhealthy) => {
                                return Err(fail("its health check reports unhealthy".into()));
                            }
                            Some(other) => {
                                good = false;
                                last_state.push_str(&format!(", health {other}"));
                                probe.look(podman, clock, &c.id, other);
                            }
                            None => {
                                good = false;
                                last_state.push_str(", no health status yet");
                            }
                        }
                    }
                }
            }
        }
        if good {
            let since = *healthy_since.get_or_insert(now);
            if now.duration_since(since) >= exp.min_healthy {
                return Ok(Converged {
                    invocation_id: invocation,
                    container_id,
                    waited: now.duration_since(start),
                });
            }
        } else {
            healthy_since = None;
        }
        clock.sleep(pauses.pause());
    }
}

/// Whether the unit's running container carries the expected revision and image.
fn runs_wanted(
    podman: &dyn Podman,
    units: &[String],
    exp: &Expectation,
) -> Result<bool, WaitError> {
    Ok(podman.unit_containers(units)?.iter().any(|c| {
        c.running()
            && c.revision.as_deref() == Some(exp.revision.as_str())
            && c.image_id == exp.image_id
    }))
}

pub fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
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

    fn wait(
        script: Vec<(&'static str, &'static str, &'static str)>,
    ) -> Result<Converged, WaitError> {
        let podman = FakePodman {
            containers: vec![ContainerInfo {
                id: "c1".into(),
                image_id: "img".into(),
                revision: Some("rev".into()),
                unit: "a.service".into(),
                state: ContainerState::Running,
                health: None,
                started_at: 0,
            }],
            ..FakePodman::default()
        };
        let exp = Expectation {
            service: "a.service".into(),
            revision: "rev".into(),
            image_id: "img".into(),
            needs_health: false,
            runs_container: true,
            previous_invocation: Some("old".into()),
            min_healthy: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        };
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
        let podman = FakePodman {
            containers: vec![ContainerInfo {
                id: "c1".into(),
                image_id: "img".into(),
                revision: Some("rev".into()),
                unit: "a.service".into(),
                state: ContainerState::Running,
                health: None,
                started_at: 0,
            }],
            ..FakePodman::default()
        };
        let exp = Expectation {
            service: "a.service".into(),
            revision: "rev".into(),
            image_id: "img".into(),
            needs_health: false,
            runs_container: true,
            previous_invocation: Some("systemds-own".into()),
            min_healthy: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        };
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
        let podman = FakePodman {
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
        };
        let exp = Expectation {
            service: "a.service".into(),
            revision: "rev".into(),
            image_id: "img".into(),
            needs_health: true,
            runs_container: true,
            previous_invocation: Some("old".into()),
            min_healthy: Duration::from_secs(2),
            timeout: Duration::from_secs(30),
        };
        let systemd = Scripted(Mutex::new(vec![("new", "active", "0")]));
        wait_converged(&systemd, &podman, clock, &exp)
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
}
