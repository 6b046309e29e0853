//! `flow_state`: what a deploy, update or upgrade run checks before it touches anything, and
//! what it records when it is done.
//!
//! `begin` fails, before anything stops, when: another run's lease is held (a run of the same
//! flow and stream resumes it instead), an upgrade path is not allowed, the image store is short
//! of space, the podman API is unreachable, a service is unhealthy, or an image is missing.
//! `finish` records the stream in use and releases the lease.

mod checks;
pub mod spec;
mod stream;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::{
    StateDir, StateError, atomic_write, read_json, read_optional, remove_file, write_json,
};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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

/// The lease an unfinished run holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lease {
    pub flow: String,
    pub stream: String,
    pub from_stream: Option<String>,
    pub run_id: String,
    pub started_at: String,
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
    let lease_path = state.path("flow-lease.json");
    let stream_path = state.path("stream");
    let recorded = read_optional(&stream_path)?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let lease: Option<Lease> = read_json(&lease_path)?;
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
            if let Some(l) = &lease {
                if l.flow == flow && l.stream == stream {
                    report.resumed = l.run_id != run_id;
                } else {
                    return Err(FlowError::Leased {
                        flow: l.flow.clone(),
                        stream: l.stream.clone(),
                        run_id: l.run_id.clone(),
                        started_at: l.started_at.clone(),
                        path: lease_path,
                    });
                }
            }
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
            if let Some(archive) = &p.image_archive
                && !inv.check_mode
            {
                report.loaded_images = host.podman.load_archive(archive)?;
            }
            checks::check_images(host, &p.images)?;
            let fresh = lease.is_none() || report.resumed;
            if !inv.check_mode && fresh {
                let l = Lease {
                    flow: flow.clone(),
                    stream: stream.clone(),
                    from_stream: lease
                        .as_ref()
                        .and_then(|l| l.from_stream.clone())
                        .or(recorded.clone()),
                    run_id: run_id.clone(),
                    started_at: crate::time::now_rfc3339(),
                };
                state.ensure("")?;
                write_json(&lease_path, &l, 0o600)?;
            }
            let how = if report.resumed {
                "resuming an interrupted run"
            } else {
                "all checks passed"
            };
            (false, format!("preflight for {flow} to {stream}: {how}"))
        }
        // Recording the stream a run reached is bookkeeping, not a change to the services, so
        // a no-op run stays `changed=0`.
        Action::Finish => {
            if !inv.check_mode {
                state.ensure("")?;
                atomic_write(&stream_path, format!("{stream}\n").as_bytes(), 0o644)?;
                // The run is done; the checkpoint of how things were before it is no longer needed.
                remove_file(&state.path(&format!("checkpoints/{flow}.json")))?;
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
