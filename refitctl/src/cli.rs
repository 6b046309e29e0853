//! The command line: subcommands, the options they share, and an example on every `--help`.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "refitctl",
    version,
    about = "Update and upgrade podman quadlet services in place, with refit's Ansible flows",
    long_about = "refitctl runs the refit.containers playbooks with ansible-playbook, remembers the \
                  parameters of the last successful run, and exits with a code that says what \
                  happened.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

pub const EXIT_CODES: &str = "\
Exit codes:
  0   success, whether or not anything changed
  1   failed: a task failed, a host was unreachable, or refitctl could not run
  2   with --detailed-exitcode only: success, and something changed (plan: something would
      change); without it, that is 0
  4   refused by preflight: nothing was touched
  64  the command line is wrong
  129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM: passed on to ansible-playbook, which has
      stopped; rerun to resume";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Deploy the services of a deployment file, pulling every image first
    #[command(
        after_help = "Example:\n  refitctl deploy --deployment examples/foreman-like/deployment.yml -i hosts.ini"
    )]
    Deploy(Common),
    /// Bring every service to the newest image of its stream (3.16.0 to the latest 3.16.z)
    #[command(
        after_help = "Example:\n  refitctl update            # with the parameters of the last run\n  refitctl update --check --diff\n  refitctl update --json | jq -r 'select(.progress) | .progress.line'"
    )]
    Update(Common),
    /// Move to another stream (3.15 to 3.16), running pending migrations
    #[command(after_help = "Example:\n  refitctl upgrade --to 1.1")]
    Upgrade {
        /// The stream to upgrade to
        #[arg(long, value_name = "STREAM")]
        to: String,
        #[command(flatten)]
        common: Common,
    },
    /// Show what an update (or, with --to, an upgrade) would do, without doing it
    #[command(
        after_help = "Example:\n  refitctl plan\n  refitctl plan --to 1.1\n  refitctl plan --json --detailed-exitcode"
    )]
    Plan {
        /// Plan an upgrade to this stream instead of an update
        #[arg(long, value_name = "STREAM")]
        to: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Show, changing nothing, what a deploy over services already running would do: which
    /// units it takes over as they run (no restart), which it updates, and why
    #[command(
        after_help = "Example:\n  refitctl adopt --deployment deployment.yml\n  refitctl adopt --json --diff"
    )]
    Adopt {
        #[command(flatten)]
        common: Common,
    },
    /// A table per service: unit, state, revision, running image, stream, newer image
    #[command(after_help = "Example:\n  refitctl status\n  refitctl status --json | jq .")]
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// Put services back on the revision and image they ran before the last change
    #[command(
        after_help = "Example:\n  refitctl rollback           # every service that has an earlier revision\n  refitctl rollback content   # one service\n  refitctl rollback content --to 3fa9c2   # a kept revision, as `history` prints it"
    )]
    Rollback {
        /// One service of the deployment (`content`, `worker@`); all of them when omitted
        service: Option<String>,
        /// Go to this kept revision (a prefix of its id in `refitctl history`) instead of the previous one
        #[arg(long, value_name = "REVISION", requires = "service")]
        to: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Each service's kept revisions: id, when it converged, image, stream, image still local
    #[command(
        after_help = "Example:\n  refitctl history\n  refitctl history content --json | jq '.[].id'"
    )]
    History {
        /// One service of the deployment; all of them when omitted
        service: Option<String>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Clone, Default, Args)]
pub struct Common {
    /// Ansible inventory: a file or a comma list; default this host, local connection
    #[arg(short, long, value_name = "INVENTORY")]
    pub inventory: Option<String>,
    /// The deployment: a vars file with refit_services, refit_migrations and refit_stream
    #[arg(long, value_name = "FILE")]
    pub deployment: Option<PathBuf>,
    /// Report what would change, and change nothing
    #[arg(long)]
    pub check: bool,
    /// JSON on stdout: plan and adopt print each host's plan, status its services, history one
    /// object per kept revision; deploy, update, upgrade and rollback print their events as
    /// JSON lines as they come (each progress event of a long step, each refit task's result,
    /// the closing stats), their text going to stderr
    #[arg(long)]
    pub json: bool,
    /// Show each changed unit file's unified diff (secrets masked), as it goes and in the summary
    #[arg(long)]
    pub diff: bool,
    /// Exit 2 when something changed (plan: would change), as terraform's -detailed-exitcode
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Only the hosts matching PATTERN (passed to ansible-playbook's --limit); never remembered
    #[arg(short, long, value_name = "PATTERN")]
    pub limit: Option<String>,
    /// Drop a remembered parameter before this run (repeatable); a successful run saves that
    #[arg(long, value_name = "PARAM", value_enum)]
    pub forget: Vec<Remembered>,
    /// More output (repeat for more); passed on to ansible-playbook
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Pull nothing: every image must be local, or in --image-archive
    #[arg(long)]
    pub offline: bool,
    /// Pull from the registries again (undoes a remembered --offline)
    #[arg(long, conflicts_with = "offline")]
    pub online: bool,
    /// A `podman save -m` archive on each host, loaded before anything else
    #[arg(long, value_name = "PATH", requires = "offline")]
    pub image_archive: Option<PathBuf>,
    /// The registry logins on each host (podman's auth.json format), for pulls and digest
    /// lookups [default: podman's own lookup order]; remembered, never read by refitctl
    #[arg(long, value_name = "PATH")]
    pub auth_file: Option<PathBuf>,
    /// Hosts changed at once: a number or a percentage (Ansible's serial)
    #[arg(long, value_name = "N")]
    pub serial: Option<String>,
    /// A first wave of N hosts (or of the hosts matching PATTERN), alone; the run stops if one
    /// fails or does not stay converged for --canary-soak; never remembered
    #[arg(long, value_name = "N|PATTERN")]
    pub canary: Option<String>,
    /// Seconds the canary hosts must stay converged before the other waves [default: 10]
    #[arg(long, value_name = "S", requires = "canary")]
    pub canary_soak: Option<u64>,
    /// A wave goes on past this share of its hosts failed, in percent (Ansible's
    /// max_fail_percentage) [default: 0]; never remembered
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub max_fail_percentage: Option<u8>,
    /// Where refitctl remembers its parameters [default: /var/lib/refit/refitctl, for
    /// --scope-user USER /var/lib/refit/refitctl-user-USER, or $REFITCTL_STATE_DIR]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The services of this user (its systemd manager, quadlet dir, podman socket and state
    /// dir), not root's: the flows run with refit_scope=user. Each user, and root, has its own
    /// remembered parameters and lock, so their runs never wait for each other
    #[arg(long, value_name = "USER", value_parser = user_name)]
    pub scope_user: Option<String>,
}

impl Command {
    pub fn common(&self) -> &Common {
        match self {
            Command::Deploy(c) | Command::Update(c) => c,
            Command::Status { common, .. }
            | Command::Upgrade { common, .. }
            | Command::Plan { common, .. }
            | Command::Adopt { common, .. }
            | Command::Rollback { common, .. }
            | Command::History { common, .. } => common,
        }
    }
}

/// A parameter refitctl remembers, as `--forget` names it (obsah's `--reset-PARAM`). clap
/// refuses any other name, listing these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Remembered {
    Inventory,
    Deployment,
    /// `--offline`, and the `--image-archive` that only applies with it.
    Offline,
    ImageArchive,
    /// `--auth-file`: podman's own lookup order applies again.
    AuthFile,
    Serial,
    /// The stream an upgrade moved to: the deployment file's own applies again.
    Stream,
}

/// A user name as shadow-utils takes it; it also names a dir, so nothing else is let through.
fn user_name(s: &str) -> Result<String, String> {
    let ok = s.len() <= 32
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a user name; give one like `app` (lower-case letters, digits, _ and -)"
        ))
    }
}
