//! What can stop refitctl before or around an ansible-playbook run. Each message is one line
//! that says what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error(
        "no deployment given: pass --deployment FILE (refitctl remembers it after a successful run)"
    )]
    NoDeploymentGiven,
    #[error("the deployment file {0} does not exist; check the path given to --deployment")]
    NoDeployment(PathBuf),
    #[error("the inventory {0} does not exist; pass -i with a file, or a comma list of hosts")]
    NoInventory(String),
    #[error("ansible-playbook could not be started ({0}); install ansible-core, or put it on PATH")]
    NoAnsible(#[source] std::io::Error),
    #[error(
        "the refit.containers collection is not installed; install it with ansible-galaxy, or run refitctl from a checkout after `make modules`"
    )]
    NoCollection,
    #[error("refitctl's state dir {path} cannot be used ({source}); pass --state-dir")]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is {why}, and refitctl trusts what it remembers in its state dir only when it is yours alone: fix its owner and mode, or pass --state-dir"
    )]
    UntrustedStateDir { path: PathBuf, why: String },
    #[error("the path {path} cannot be made absolute ({source}); pass it as an absolute path")]
    NotAbsolute {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the service name {0:?} is not a unit name; give one as the deployment names it, like `content` or `worker@`"
    )]
    BadService(String),
    #[error("ansible-playbook failed before running anything: {0}")]
    Ansible(String),
    #[error("refitctl cannot catch SIGINT and SIGTERM ({0}), so it runs nothing")]
    Signals(#[source] std::io::Error),
    #[error(
        "interrupted by {}; ansible-playbook has stopped. Run the same command again: it resumes the flow at once",
        .0.name()
    )]
    Interrupted(crate::signals::Interrupt),
    #[error("{what} {value:?} is refused: it must be {want}")]
    BadInput {
        what: &'static str,
        value: String,
        want: &'static str,
    },
    #[error(
        "the remembered {what} {path} is a relative path, which would be read from whatever dir refitctl runs in; pass it again (refitctl remembers it absolute), or --forget it"
    )]
    RelativePath { what: &'static str, path: PathBuf },
    #[error(transparent)]
    Deployment(#[from] crate::deployment::DeploymentError),
    #[error(transparent)]
    State(#[from] refit_core::state::StateError),
}
