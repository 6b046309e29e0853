//! What a migration run can fail with, each naming what to do.

use super::backup;
use crate::param_path::{AtParam, within_param};
use crate::podman::PodmanError;
use crate::state::StateError;
use crate::unit::name::NameError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{0} is not a variable name; use letters, digits and '_', not starting with a digit")]
    EnvName(String),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(
        "{0} is an empty list; give the command as a list of words, for example [manage, migrate]"
    )]
    EmptyCommand(&'static str),
    #[error("{0} contains a newline; give each word on one line")]
    Newline(&'static str),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(
        "image {0} is not present locally; fetch it first (container_unit state=present, or podman load)"
    )]
    ImageMissing(String),
    #[error(
        "the migration timed out after {secs} s; the container was killed and removed. Last output:\n{tail}"
    )]
    Timeout { secs: u64, tail: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Podman(#[from] PodmanError),
    #[error(transparent)]
    Stop(#[from] crate::stop_services::StopError),
    #[error(transparent)]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error(
        "instances.{0}: give the template's instances as a list of names or numbers, as in `[1, 2]`"
    )]
    BadInstances(String),
    #[error("stage name {0:?} must be a plain name: letters, digits, - and _")]
    BadStage(String),
    #[error(transparent)]
    Backup(#[from] backup::BackupError),
    #[error(
        "backup needs stop_first: true, so that nothing writes after the backup and a failed run's recovery can find it"
    )]
    BackupNeedsStop,
    #[error("stop_first needs `unit`: with only an image there is no service to stop")]
    StopNeedsUnit,
    #[error("start_after needs stop_first: true; without it nothing is stopped to start again")]
    StartNeedsStop,
    #[error(
        "{service} was started again after its migration, but {why}; look at `journalctl -u {service}`: the flow's recovery puts the previous release back"
    )]
    NotServing { service: String, why: String },
    #[error(
        "{origin}: the podman secret {secret} its unit needs is gone; deploy the unit again (container_unit with its secret_env) first"
    )]
    SecretGone { origin: String, secret: String },
    /// An error in one parameter (or one `migrations` entry), named by its path.
    #[error(transparent)]
    In(AtParam<MigrateError>),
}

within_param!(MigrateError::In);

/// Where a migration container would come from cannot be told (source.rs).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Name(#[from] crate::unit::name::NameError),
    #[error("no unit file {0}; deploy the service first, or give `image` instead of `unit`")]
    NoUnit(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: crate::state::StateError,
    },
    #[error("{path} is not a unit quadlet reads ({source}); fix the unit")]
    Parse {
        path: PathBuf,
        #[source]
        source: crate::unit::file::ParseError,
    },
    #[error(
        "{0} names no image (Image= in [Container], or ImageTag=/Image= in the .image or .build unit it names); fix the unit"
    )]
    NoImage(PathBuf),
    #[error(transparent)]
    Image(#[from] crate::reference::RefError),
    #[error("a migration needs `unit` or `image`")]
    NoSource,
    #[error(
        "{path}: `Secret={entry}` is mounted as a file, which run_migrations cannot give a one-off container; make it `type=env`, or pass what the migration needs with `secret_env`"
    )]
    MountedSecret { path: PathBuf, entry: String },
}
