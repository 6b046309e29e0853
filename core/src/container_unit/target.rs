//! Targets: validated units with their services, and their plans. from_params.rs makes them
//! from the parameters, in dependency order; resolve.rs plans them once observed.

pub use super::desired::Desired;
use crate::plan::{Action, Reason, Wanted};
use crate::systemd::Job;
use crate::unit::UnitName;
use crate::unit::dropins::DropIn;
use std::path::PathBuf;

/// A validated request for one unit file, before anything on the host is touched.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: UnitName,
    pub wanted: Wanted,
    pub path: PathBuf,
    /// None for `absent`, and for `rolled_back` until the previous revision is read.
    pub desired: Option<Desired>,
    /// A template's instances; empty for a plain unit.
    pub instances: Vec<String>,
    pub canary: Option<usize>,
    /// The services this unit orders after, from `depends_on` and its [Unit] section.
    pub after: Vec<String>,
    /// Where template instances' boot links go.
    pub systemd_dir: PathBuf,
    /// The podman secrets `secret_env` asks for, created before anything is written.
    pub secrets: Vec<super::secret_names::UnitSecret>,
    /// For `rolled_back`: a prefix of the history id of the kept revision to go back to.
    pub rollback_to: Option<String>,
    /// The drop-ins quadlet merges into the unit, read from the quadlet dir: part of the
    /// revision, so a changed drop-in restarts the unit.
    pub dropins: Vec<DropIn>,
    /// What the effective revision covers besides the unit's own text: the revisions of the
    /// units it refers to (set by `references::resolve`), and extra inputs from outside the
    /// unit files (the seam for secrets and files refit did not write).
    pub inputs: crate::unit::graph::Inputs,
    /// Host files whose change restarts the unit (`inputs`).
    pub restart_on_change: Vec<PathBuf>,
    /// The unit's own `state` is `present`: no run starts it (a timer's job, run by its timer),
    /// so it never reports a start as needed, which would keep a flow's start phase busy.
    pub never_started: bool,
}

impl Target {
    /// The services this target runs: the unit's own, or one per instance.
    pub fn services(&self) -> Vec<String> {
        if self.name.is_template() {
            self.instances
                .iter()
                .map(|i| self.name.instance_service(i))
                .collect()
        } else {
            vec![self.name.service()]
        }
    }
}

/// A start or restart of one service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceJob {
    pub service: String,
    pub job: Job,
}

/// What converges one target: file actions once, then jobs per service.
#[derive(Debug, Clone, Default)]
pub struct TargetPlan {
    pub file: Vec<Action>,
    /// Services to stop: listed ones when wanted stopped or absent, and unlisted instances.
    pub stops: Vec<String>,
    /// Services to start or restart, in instance order.
    pub starts: Vec<ServiceJob>,
    /// Instances a `canary` run leaves on their revision.
    pub held: Vec<String>,
    /// Boot links of template instances to create and to remove.
    pub link: Vec<PathBuf>,
    pub unlink: Vec<PathBuf>,
    pub reasons: Vec<Reason>,
    pub restart_needed: bool,
    pub start_needed: bool,
    /// For a `.network` whose change podman can apply only to a new network: its users are
    /// stopped, the network removed and made anew (`network_change`).
    pub recreate: Option<Recreation>,
}

/// A network to make anew, after the unit's new text is written and before its users start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recreation {
    /// The network's name in podman (`NetworkName=`, else `systemd-STEM`).
    pub network: String,
    /// The option whose change needs it, as the result and the message name it.
    pub option: String,
    /// The network unit's service, whose start creates the network (`--ignore`).
    pub service: String,
    /// The services of every unit that joins the network (containers and pods, and the
    /// containers of such pods), in the order they are stopped: containers first.
    pub users: Vec<String>,
    /// The users this run starts again through their own plans (their revision changed).
    pub planned: Vec<String>,
}

impl TargetPlan {
    /// For a staged run: a plan that writes the file leaves the write, the reload and the boot
    /// links to the phase that installs the text (links of the new instance set would start
    /// them at boot on the old text). Says whether it did.
    pub fn defer_file(&mut self) -> bool {
        if !self.file.contains(&Action::WriteUnit) {
            return false;
        }
        self.file.clear();
        self.link.clear();
        self.unlink.clear();
        true
    }

    pub fn changes(&self) -> bool {
        !(self.file.is_empty()
            && self.stops.is_empty()
            && self.starts.is_empty()
            && self.link.is_empty()
            && self.unlink.is_empty())
    }
}
