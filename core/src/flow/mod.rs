//! `flow_state`: what a deploy, update or upgrade run checks before it touches anything, and
//! what it records when it is done.
//!
//! `begin` fails, before anything stops, when: another run's lease is held (a run of the same
//! flow and stream resumes it instead), an upgrade path is not allowed, the image store is short
//! of space, the podman API is unreachable, a service is unhealthy, or an image is missing.
//! `finish` records the stream in use and releases the lease.

mod checks;
mod lease;
pub mod spec;
mod stream;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::{StateDir, StateError, atomic_write, read_optional, remove_file};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

pub use lease::{Lease, Leases, Taken};

pub use stream::{PathError, check_upgrade};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Begin,
    Finish,
    Abandon,
    Status,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub action: Action,
    pub flow: Option<String>,
    pub stream: Option<String>,
    #[serde(default)]
    pub streams: Vec<String>,
    pub allow_skip: bool,
    pub run_id: Option<String>,
    #[serde(default)]
    pub services: Vec<String>,
    #[serde(default)]
    pub images: Vec<String>,
    pub image_archive: Option<PathBuf>,
    pub min_free_mb: u64,
    pub lease_grace: u64,
    pub image_store: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
}

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("preflight: {0}")]
    Path(#[from] PathError),
    #[error(
        "preflight: an unfinished {flow} to stream {stream} (run {run_id}, started {started_at}) holds {path}; run that {flow} again to resume it, or release it with flow_state action=abandon"
    )]
    Leased {
        flow: String,
        stream: String,
        run_id: String,
        started_at: String,
        path: PathBuf,
    },
    #[error(
        "preflight: run {run_id} (started {started_at}) is live: a refit module worked on this host {quiet_secs} s ago; wait for it to finish. If that run is dead, run again once the host has been quiet for {grace_secs} s, and this run resumes it"
    )]
    Live {
        run_id: String,
        started_at: String,
        quiet_secs: u64,
        grace_secs: u64,
    },
    #[error(
        "preflight: a refit module is at work on this host now ({holder}); wait for its run to finish, then run again"
    )]
    Busy { holder: String },
    #[error(
        "the run lease belongs to run {holder}, not to this run {run_id}; this run did not own the host, so it records nothing. Check `flow_state action=status`, and let run {holder} finish"
    )]
    NotOwner { holder: String, run_id: String },
    #[error(
        "preflight: the image store {path} has {free} MiB free, less than the {need} MiB needed; free some space (podman image prune) or lower min_free_mb"
    )]
    Disk { path: PathBuf, free: u64, need: u64 },
    #[error("preflight: cannot read free space of {0}: {1}")]
    Statvfs(PathBuf, String),
    #[error("preflight: {0}")]
    Podman(#[from] crate::podman::PodmanError),
    #[error("preflight: {0}")]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error(
        "preflight: these services are not healthy, so nothing was touched: {0}; fix them first"
    )]
    Unhealthy(String),
    #[error(
        "preflight: these images are not present locally, so nothing was touched: {0}; load them (image_archive) or pull them first"
    )]
    MissingImages(String),
    #[error(
        "preflight: this is the first run here, so there is no stream to upgrade from; deploy stream {0} first"
    )]
    NothingToUpgrade(String),
    #[error(
        "preflight: this host runs stream {recorded}, and a{flow} stays on its stream; to move to {stream}, run an upgrade"
    )]
    StreamChange {
        flow: String,
        recorded: String,
        stream: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
}

#[derive(Debug, Default, Serialize)]
struct Report {
    /// The stream recorded before this run.
    recorded_stream: Option<String>,
    stream: Option<String>,
    resumed: bool,
    loaded_images: Vec<String>,
    free_mb: Option<u64>,
    lease: String,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, FlowError> {
    let state = StateDir::new(&p.state_dir);
    let leases = Leases::new(&state);
    let lease_path = leases.path().clone();
    let stream_path = state.path("stream");
    let recorded = read_optional(&stream_path)?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let lease: Option<Lease> = leases.read()?;
    let mut report = Report {
        recorded_stream: recorded.clone(),
        stream: p.stream.clone(),
        lease: lease_path.display().to_string(),
        ..Report::default()
    };
    let flow = p.flow.clone().unwrap_or_default();
    let stream = p.stream.clone().unwrap_or_default();
    let run_id = p.run_id.clone().unwrap_or_default();
    let (changed, msg) = match p.action {
        Action::Status => (
            false,
            format!("stream {}", recorded.as_deref().unwrap_or("none recorded")),
        ),
        Action::Abandon => match lease {
            None => (false, "no lease is held".to_string()),
            // With a run_id, only that run's own lease is released, never another run's.
            Some(l) if p.run_id.as_ref().is_some_and(|id| *id != l.run_id) => (
                false,
                format!(
                    "the lease belongs to run {}, not this one; left as it is",
                    l.run_id
                ),
            ),
            Some(l) => {
                if !inv.check_mode {
                    remove_file(&lease_path)?;
                }
                (
                    true,
                    format!(
                        "released the lease of the unfinished {} to {}",
                        l.flow, l.stream
                    ),
                )
            }
        },
        Action::Begin => {
            let grace = Duration::from_secs(p.lease_grace);
            // Read-only first: a refusal for any reason writes nothing.
            leases.decide(
                lease.as_ref(),
                &flow,
                &stream,
                &run_id,
                leases.quiet_for(),
                grace,
            )?;
            if flow != "upgrade"
                && let Some(r) = &recorded
                && *r != stream
            {
                return Err(FlowError::StreamChange {
                    flow: if flow == "update" {
                        "n update".into()
                    } else {
                        " deploy".into()
                    },
                    recorded: r.clone(),
                    stream: stream.clone(),
                });
            }
            if flow == "upgrade" {
                let from = lease
                    .as_ref()
                    .and_then(|l| l.from_stream.clone())
                    .or_else(|| recorded.clone())
                    .ok_or_else(|| FlowError::NothingToUpgrade(stream.clone()))?;
                check_upgrade(&from, &stream, &p.streams, p.allow_skip)?;
            }
            report.free_mb = Some(checks::check_disk(&p.image_store, p.min_free_mb)?);
            host.podman.ping()?;
            checks::check_services(host, &p.services)?;
            if p.image_archive.is_none() {
                checks::check_images(host, &p.images)?;
            }
            if inv.check_mode {
                (
                    false,
                    format!("preflight for {flow} to {stream}: all checks passed"),
                )
            } else {
                // The decision again, under the lock: another controller may have taken the
                // lease since it was read.
                let quiet = leases.quiet_for();
                let _lock = leases.lock(&run_id)?;
                let held = leases.read()?;
                let taken = leases.decide(held.as_ref(), &flow, &stream, &run_id, quiet, grace)?;
                if let Some(archive) = &p.image_archive {
                    report.loaded_images = host.podman.load_archive(archive)?;
                    checks::check_images(host, &p.images)?;
                }
                let mut resumed_from = held
                    .as_ref()
                    .map(|l| l.resumed_from.clone())
                    .unwrap_or_default();
                if let Taken::Resumed { from } = &taken {
                    resumed_from.push(from.clone());
                }
                let l = Lease {
                    flow: flow.clone(),
                    stream: stream.clone(),
                    from_stream: held
                        .as_ref()
                        .and_then(|l| l.from_stream.clone())
                        .or(recorded.clone()),
                    run_id: run_id.clone(),
                    started_at: held
                        .as_ref()
                        .map_or_else(crate::time::now_rfc3339, |l| l.started_at.clone()),
                    resumed_from,
                };
                leases.write(&l)?;
                report.resumed = matches!(taken, Taken::Resumed { .. });
                let how = match taken {
                    Taken::Resumed { from } => format!("resuming an interrupted run ({from})"),
                    Taken::Own | Taken::Fresh => "all checks passed".into(),
                };
                (false, format!("preflight for {flow} to {stream}: {how}"))
            }
        }
        // Recording the stream a run reached is bookkeeping, not a change to the services, so
        // a no-op run stays `changed=0`.
        Action::Finish => {
            if !inv.check_mode {
                let _lock = leases.lock(&run_id)?;
                if let Some(l) = leases.read()?
                    && l.run_id != run_id
                {
                    return Err(FlowError::NotOwner {
                        holder: l.run_id,
                        run_id,
                    });
                }
                atomic_write(&stream_path, format!("{stream}\n").as_bytes(), 0o644)?;
                // The run is done; the checkpoint of how things were before it is no longer needed.
                remove_file(&state.path(&format!("checkpoints/{flow}.json")))?;
                // What this run stopped is running again; a later recovery must not restart it.
                remove_file(&state.path(&format!("stops/{flow}.json")))?;
                remove_file(&lease_path)?;
            }
            (false, format!("{flow} finished on stream {stream}"))
        }
    };
    Ok(Outcome::new(changed, msg).with_data(&report))
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, FlowError> {
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    let registry = crate::registry::HttpRegistry::from_host();
    run(p, inv, &Host::real(&podman, &registry))
}

#[cfg(test)]
mod tests;
