//! Waiting for convergence, observed rather than assumed: a return from `systemctl restart`
//! is not convergence (a crashing image returns rc 0 with the default sdnotify).
//!
//! A started service has converged when a *new* invocation is active, its container carries the
//! desired revision label and image ID, it is healthy where it has a health check, and all of
//! that has held, with no restart, for `min_healthy`. It fails fast on a failed unit, a
//! scheduled auto-restart, a restart counter that moves, or an unhealthy container.

use crate::podman::{Health, Podman};
use crate::systemd::Systemd;
use std::time::{Duration, Instant};

/// Time, behind a trait so waits can be tested without sleeping.
pub trait Clock: Sync {
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// How often the wait looks again.
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct Expectation {
    pub service: String,
    pub revision: String,
    pub image_id: String,
    pub needs_health: bool,
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
    let fail = |why: String| WaitError::NotConverged {
        service: exp.service.clone(),
        why,
    };
    let units = [exp.service.clone()];
    // The first new invocation and its restart count; any later change is a crash loop.
    let mut seen: Option<(String, u64)> = None;
    let mut healthy_since: Option<Instant> = None;
    let mut last_state = String::from("not observed yet");
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
            last_state.push_str(", still the previous invocation");
            clock.sleep(POLL);
            continue;
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
        match &seen {
            None => seen = Some((invocation.clone(), st.n_restarts())),
            Some((inv, n)) if *inv != invocation || *n != st.n_restarts() => {
                return Err(fail(format!(
                    "the service restarted while being watched (NRestarts {} -> {}): it is crash-looping",
                    n,
                    st.n_restarts()
                )));
            }
            Some(_) => {}
        }
        let mut good = st.active_state() == "active";
        let mut container_id = String::new();
        if good {
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
                            Some(Health::Healthy) => {}
                            Some(Health::Unhealthy) => {
                                return Err(fail("its health check reports unhealthy".into()));
                            }
                            Some(other) => {
                                good = false;
                                last_state.push_str(&format!(", health {other}"));
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
        clock.sleep(POLL);
    }
}

pub fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}
