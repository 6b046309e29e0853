//! `start_after`: what a migration stopped starts again as soon as it has run, and is waited
//! for until it serves: active, and healthy where its container has a health check. The next
//! migration stops nothing before that, so each service is down for its own migration and
//! start alone; the start phase then finds it converged and records it as the revision that ran.

use super::MigrateError;
use super::same_image::Waves;
use crate::host::Host;
use crate::podman::{Health, HealthProbe};
use crate::stop_services::{StartLimit, StopError, start_set, start_set_at_once};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The longest pause between two looks at a started container's health.
const POLL: Duration = Duration::from_millis(200);

/// How the services a migration stopped start again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// One after another in dependency order, each waited for until active.
    InOrder,
    /// Every start handed to systemd at once (which keeps their ordering): for the services of
    /// one image that stopped side by side (`same_image`).
    AtOnce,
}

/// How long a start again may take, and how long each service must serve to count as back.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub deadline: Duration,
    pub min_healthy: Duration,
}

/// Starts `stopped` again; in two waves when the migration stopped the other units of its
/// image too (`waves`, as `SameImage::waves` split them for the stop): first its own service
/// and what needs it, then, as soon as those serve, the others, at once, and then all of them
/// must serve for `min_healthy` together. The migrated service is the one whose release the migration is for: its new
/// release proves it serves before the others of its image start on the migrated data, and on
/// a small host it starts without their starts competing for the CPU (on 2 cores, Pulp's API
/// served 8.4 s after its start beside the content app and two workers, 4.8 s alone). Without
/// such units, `stopped` starts in dependency order. Both waves share the one deadline.
pub(super) fn start_again_in_waves(
    host: &Host,
    stopped: &[String],
    waves: Option<&Waves>,
    bounds: Bounds,
) -> Result<Vec<String>, MigrateError> {
    let since = host.clock.now();
    // One probe of each service for both waves: a probe that passed in the first is the one
    // whose recorded check the second asks for.
    let mut probes = Probes::new();
    let Some(waves) = waves else {
        let wave = Wave {
            units: stopped,
            pace: Pace::InOrder,
            serving: &[],
            pass_serves: false,
        };
        return start_again(host, &wave, since, bounds, &mut probes);
    };
    // Every service of a wave is watched, also one a unit of the wave pulled up already.
    let own = services(&waves.own);
    let first = Wave {
        units: &waves.own,
        pace: Pace::AtOnce,
        serving: &own,
        pass_serves: true,
    };
    let until_served = Bounds {
        min_healthy: Duration::ZERO,
        ..bounds
    };
    let mut started = start_again(host, &first, since, until_served, &mut probes)?;
    let all = services(stopped);
    let then = Wave {
        units: &waves.same_image,
        pace: Pace::AtOnce,
        serving: &all,
        pass_serves: false,
    };
    started.extend(start_again(host, &then, since, bounds, &mut probes)?);
    Ok(started)
}

/// Each service's health probe, by service.
type Probes = HashMap<String, HealthProbe>;

/// One start of a migration's stopped units.
struct Wave<'a> {
    /// What to start (what of it is active already stays as it is).
    units: &'a [String],
    pace: Pace,
    /// The services that must serve besides those this wave starts.
    serving: &'a [String],
    /// A passing probe of a service's own health command is enough to serve: the first wave
    /// proves its new release answers, and the next need not also wait for podman's
    /// recorded check (which it then asks for, and judges).
    pass_serves: bool,
}

/// Starts a wave at its pace; returns what it started once that and every one of its
/// `serving` is active and healthy for `min_healthy`, or the first that is not, `deadline`
/// after `since`.
fn start_again(
    host: &Host,
    wave: &Wave,
    since: Instant,
    bounds: Bounds,
    probes: &mut Probes,
) -> Result<Vec<String>, MigrateError> {
    let Bounds {
        deadline,
        min_healthy,
    } = bounds;
    let _step = crate::progress::step(
        format!("starting {}", wave.units.join(", ")),
        Some(deadline),
    );
    let set = host.systemd.show(wave.units).map_err(StopError::from)?;
    let started = match wave.pace {
        // The migration's stop reset their start limit, and nothing started them since.
        Pace::InOrder => {
            let limit = StartLimit::ResetAtTheStop;
            start_set(&super::stop_host(host), &set, false, limit, since, deadline)?.started
        }
        Pace::AtOnce => start_set_at_once(&super::stop_host(host), &set, since, deadline)?.started,
    };
    let mut watched = wave.serving.to_vec();
    for s in services(&started) {
        if !watched.contains(&s) {
            watched.push(s);
        }
    }
    let serving = Serving {
        since,
        deadline,
        min_healthy,
        pass_serves: wave.pass_serves,
    };
    wait_healthy(host, &watched, &serving, probes)?;
    Ok(started)
}

/// The services among `units` (not their sockets): what has a container to serve.
fn services(units: &[String]) -> Vec<String> {
    units
        .iter()
        .filter(|u| u.ends_with(".service"))
        .cloned()
        .collect()
}

/// What a wait wants of its services.
struct Serving {
    /// When the starts began, from which the deadline runs.
    since: Instant,
    deadline: Duration,
    /// How long every service must serve without a break.
    min_healthy: Duration,
    /// Whether a passing probe serves (`Wave::pass_serves`).
    pass_serves: bool,
}

/// Waits until every container of `services` has served (running, and healthy where it has a
/// check) for `min_healthy` without a break; fails at once on an unhealthy one, a service that
/// went down, or the deadline.
fn wait_healthy(
    host: &Host,
    services: &[String],
    want: &Serving,
    probes: &mut Probes,
) -> Result<(), MigrateError> {
    let Serving {
        since: t0,
        deadline,
        min_healthy,
        pass_serves,
    } = *want;
    if services.is_empty() {
        return Ok(());
    }
    let mut pauses = crate::poll::Backoff::up_to(POLL);
    let mut serving_since: Option<Instant> = None;
    // The moments shown as progress lines, each once per service.
    let mut noted_started: Vec<String> = Vec::new();
    let mut noted_healthy: Vec<String> = Vec::new();
    // Each service's container is probed while podman still says `starting`: health is seen
    // as the service is ready, not at podman's next timer check.
    loop {
        let statuses = host.systemd.show(services).map_err(StopError::from)?;
        for s in statuses.iter().filter(|s| s.is_active()) {
            note_once(&mut noted_started, &s.name, "started");
        }
        let containers = host.podman.unit_containers(services)?;
        // (service, what it is doing instead of serving)
        let mut waiting: Vec<(&String, String)> = Vec::new();
        for svc in services {
            match containers.iter().find(|c| &c.unit == svc && c.running()) {
                None => waiting.push((svc, "no running container".into())),
                Some(c) => match probed(probes, svc, host, c, t0 + deadline, pass_serves)
                    .as_ref()
                    .or(c.health.as_ref())
                {
                    None => {}
                    Some(Health::Healthy) => note_once(&mut noted_healthy, svc, "healthy"),
                    Some(Health::Starting) if probes.get(svc).is_some_and(HealthProbe::passed) => {
                        note_once(&mut noted_healthy, svc, "answers its health check");
                    }
                    Some(Health::Unhealthy) => {
                        return Err(MigrateError::NotServing {
                            service: svc.clone(),
                            why: "its container is unhealthy".into(),
                        });
                    }
                    Some(other) => waiting.push((svc, format!("health {other:?}"))),
                },
            }
        }
        let now = host.clock.now();
        if waiting.is_empty() {
            let since = *serving_since.get_or_insert(now);
            if now.duration_since(since) >= min_healthy {
                return Ok(());
            }
        } else {
            serving_since = None;
        }
        // A service that stopped since its start will not serve by waiting.
        let down: Vec<String> = statuses
            .into_iter()
            .filter(|s| !s.is_active())
            .map(|s| s.name)
            .collect();
        if let Some(svc) = down.first() {
            return Err(MigrateError::NotServing {
                service: svc.clone(),
                why: "it went down after its start".into(),
            });
        }
        if let Some((first, doing)) = waiting.first()
            && now.duration_since(t0) > deadline
        {
            return Err(MigrateError::NotServing {
                service: (*first).clone(),
                why: format!(
                    "it did not serve within {} s (last seen: {doing})",
                    deadline.as_secs()
                ),
            });
        }
        host.clock.sleep(pauses.pause());
    }
}

/// The health podman reported after the run of its check that a passing probe of `svc`'s
/// container asked for in this look; None when none ran, or when a passing probe serves
/// (`pass_serves`) and the check is left to a later look.
fn probed(
    probes: &mut Probes,
    svc: &str,
    host: &Host,
    c: &crate::podman::ContainerInfo,
    deadline: Instant,
    pass_serves: bool,
) -> Option<Health> {
    let health = c.health.as_ref()?;
    let probe = probes
        .entry(svc.to_string())
        .or_insert_with(|| HealthProbe::until(deadline));
    probe.take_a_pass(pass_serves);
    probe.look(host.podman, host.clock, &c.id, health)
}

/// One progress line for `service` reaching `moment`, the first time it is seen.
fn note_once(noted: &mut Vec<String>, service: &str, moment: &str) {
    if !noted.iter().any(|n| n == service) {
        noted.push(service.to_string());
        crate::progress::note(format!("{service} {moment}"));
    }
}
