//! What can go wrong in a `container_unit` call, each error saying what to do about it.

use crate::converge::WaitError;
use crate::param_path::{AtParam, WithinParam, within_param};
use crate::podman::PodmanError;
use crate::state::StateError;
use crate::systemd::SystemdError;
use crate::unit::name::NameError;
use crate::unit::render::RenderError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error("{0} is a template; give the instances to run with `instances: [1, 2, 3]`")]
    TemplateWithoutInstances(String),
    #[error("{0} is not a template, so it has no instances; name it `NAME@` to run instances")]
    InstancesWithoutTemplate(String),
    #[error(
        "canary: {0} is not a template, so it has no instances to hold back; leave canary out, or name it `NAME@`"
    )]
    CanaryWithoutTemplate(String),
    #[error("instance {1:?} of {0} is not a valid instance name; use letters, digits and :_.-")]
    BadInstance(String, String),
    #[error("{0} appears twice in `units`; give each unit once")]
    Duplicate(String),
    #[error("instance {1:?} of {0} is listed twice in `instances`; give each instance once")]
    DuplicateInstance(String, String),
    #[error(
        "install: {key}={value} is not a unit name (such as multi-user.target); boot links are made from it, so it must be one"
    )]
    BadInstall { key: &'static str, value: String },
    #[error(
        "{unit} needs the podman secret {secret}, which is gone; deploy the unit with its secret_env again instead of rolling back"
    )]
    SecretGone { unit: String, secret: String },
    /// An error in one parameter (or one `units` entry), named by its path.
    #[error(transparent)]
    In(AtParam<UnitError>),
    #[error("`units` entries need a name; entry {0} has none")]
    UnnamedUnit(usize),
    #[error(
        "give the unit's options inside each `units` entry, not beside `units` ({0} was given at the top level)"
    )]
    MixedUnits(&'static str),
    #[error(transparent)]
    Scope(#[from] crate::scope::ScopeError),
    #[error("max_parallel must be at least 1")]
    MaxParallel,
    #[error("max_parallel_units must be at least 1")]
    MaxParallelUnits,
    #[error("keep_revisions must be from 1 to {max}; {0} was given", max = crate::state::MAX_KEEP_REVISIONS)]
    KeepRevisions(u64),
    #[error("rollback_to: {0} is not rolled back; give rollback_to only with state: rolled_back")]
    RollbackToWithoutRollback(String),
    #[error(transparent)]
    Pick(#[from] crate::state::PickError),
    #[error(
        "stage: a stage is named by `checkpoint`; `state: present` writes one and `state: started` installs what it holds; give a checkpoint and one of those states, or leave stage out"
    )]
    StageNeeds,
    #[error("checkpoint name {0:?} must be a plain name: letters, digits, - and _")]
    BadCheckpoint(String),
    #[error("{0} is not in the checkpoint, so there is nothing recorded to roll it back to")]
    NotInCheckpoint(String),
    #[error(
        "image {0} is not present locally and pull is `never`; load it first (podman load -i ARCHIVE), or allow pulls"
    )]
    ImageMissing(String),
    #[error(
        "{0} has no earlier revision recorded in the state dir, so there is nothing to roll back to"
    )]
    NoPrevious(String),
    #[error("{unit}: the unit file on disk does not parse ({source}); fix or remove {path}")]
    BadFileOnDisk {
        unit: String,
        path: PathBuf,
        #[source]
        source: crate::unit::file::ParseError,
    },
    #[error(
        "restart_on_change: {0:?} is not an absolute path; give each file as a full path, such as /etc/app/settings.yaml"
    )]
    InputPath(String),
    #[error(
        "restart_on_change: cannot read {path}; create it, or leave it out of restart_on_change"
    )]
    InputFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{unit} names the podman secret {secret}, which does not exist; create it (podman secret create {secret} FILE) before the run, or take it out of the unit"
    )]
    SecretMissing { unit: String, secret: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Systemd(#[from] SystemdError),
    #[error(transparent)]
    Podman(#[from] PodmanError),
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    #[error(transparent)]
    Wait(#[from] WaitError),
    #[error(transparent)]
    Quadlet(#[from] crate::quadlet::QuadletError),
    #[error(transparent)]
    DropIn(#[from] crate::unit::dropins::DropInError),
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error(transparent)]
    VolumeRecreation(#[from] NeedsRecreation),
    #[error(transparent)]
    NetworkNotRemoved(#[from] Box<NetworkNotRemoved>),
}

/// A unit the run refers to that cannot be followed (references.rs).
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error(transparent)]
    Graph(#[from] crate::unit::graph::GraphError),
    #[error(
        "{from} runs the image of {unit}, which names none; give {unit} an `Image=` (an .image unit) or an `ImageTag=` (a .build unit)"
    )]
    NoImage { from: String, unit: String },
    #[error("{unit}: the file in the quadlet dir does not parse ({source}); fix or remove {path}")]
    BadFile {
        unit: String,
        path: std::path::PathBuf,
        #[source]
        source: crate::unit::file::ParseError,
    },
}

within_param!(UnitError::In);

/// A render error, named by its parameter where the message does not say it already.
pub(super) fn render_error(e: RenderError) -> UnitError {
    match e {
        RenderError::Image(_) => UnitError::Render(e).within("image"),
        RenderError::Parse(_) => UnitError::Render(e).within("content"),
        other => UnitError::Render(other),
    }
}

/// A `.volume` change podman applies only when it creates the volume, while the volume exists
/// (container_unit/volume_change.rs judges it).
#[derive(Debug, thiserror::Error)]
#[error(
    "{unit} changes {option}=, which podman applies only when it creates a volume, and the volume {volume} exists; refit never removes a volume or its data. Keep {option}= as it was, or stop the containers that use it, save its data, remove it (podman volume rm {volume}) and run again; a new VolumeName= makes a new volume instead"
)]
pub struct NeedsRecreation {
    pub unit: String,
    pub option: String,
    pub volume: String,
}

/// podman would not remove a network refit makes anew (container_unit/network_change.rs).
#[derive(Debug, thiserror::Error)]
#[error(
    "podman did not remove the network {network}, which the new {option}= needs made anew: {source}. Its users were started again on it as it was. Stop the containers that still use it (podman network inspect {network} lists them), then run again"
)]
pub struct NetworkNotRemoved {
    pub network: String,
    pub option: String,
    #[source]
    pub source: PodmanError,
}
