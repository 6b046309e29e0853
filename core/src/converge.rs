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
    wait_converged_serving(systemd, podman, clock, exp, &|| {})
}

/// [`wait_converged`], calling `serving` once, the first time the service is seen serving
/// (everything but the `min_healthy` hold holds): what waits only for it to serve may start.
pub fn wait_converged_serving(
    systemd: &dyn Systemd,
    podman: &dyn Podman,
    clock: &dyn Clock,
    exp: &Expectation,
    serving: &dyn Fn(),
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
    let mut told_serving = false;
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
                        // A probe that passed had podman run its check: what podman said
                        // then is the container's health now.
                        let now_seen = c
                            .health
                            .as_ref()
                            .and_then(|h| probe.look(podman, clock, &c.id, h));
                        match now_seen.as_ref().or(c.health.as_ref()) {
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
            if !told_serving {
                told_serving = true;
                serving();
            }
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
#[path = "converge_tests.rs"]
mod tests;
