//! What `flow_state` fails with: each refusal of a run before it touches anything, and the
//! errors of the modules it calls, kept as they are.

use super::stream::PathError;
use crate::state::StateError;
use std::path::PathBuf;

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
        "preflight: run {run_id} (started {started_at}) is live: its last module call on this host was {quiet_secs} s ago; wait for it to finish. If its controller is gone (killed, powered off), run again {grace_secs} s after that call, and the new run resumes it"
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
    #[error("preflight: cannot read free space of {path}: {source}")]
    Statvfs {
        path: PathBuf,
        #[source]
        source: rustix::io::Errno,
    },
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
    #[error(transparent)]
    Param(#[from] crate::ansible::validate::ParamError),
    /// The parameters the flow built for another module, from the deployment, do not read as
    /// that module's, though its spec took them.
    #[error(
        "parameters could not be read: {0}; check the deployment's values against the options of the module the flow calls"
    )]
    Params(#[source] ParamsFault),
    #[error("target: {0}")]
    TargetName(#[source] crate::unit::name::NameError),
    #[error("target: {0:?} is not a target unit; give a name like foreman.target")]
    NotATarget(String),
    #[error(transparent)]
    Unit(#[from] crate::container_unit::UnitError),
    #[error(transparent)]
    Migrate(#[from] crate::migrate::MigrateError),
    #[error("preflight: {0}")]
    BootTime(#[from] crate::time::BootTimeError),
}

/// Why the parameters the flow built for another module did not read as that module's.
#[derive(Debug, thiserror::Error)]
pub enum ParamsFault {
    #[error("not an object")]
    NotAnObject,
    #[error(transparent)]
    Decode(#[from] serde_json::Error),
}
