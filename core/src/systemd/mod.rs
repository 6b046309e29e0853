//! systemd access. One trait, `Systemd`, so plans and waits can be tested without a host;
//! `Systemctl` is the real thing and shells out to systemctl and journalctl.

mod remembered;
mod show;
mod systemctl;

pub use remembered::Remembered;
pub use show::{PROPERTIES, UnitStatus, parse_show};
pub use systemctl::Systemctl;

#[derive(Debug, thiserror::Error)]
pub enum SystemdError {
    #[error("`{command}` failed (exit {code}): {stderr}; check `journalctl -xe` on the host")]
    Failed {
        command: String,
        code: i32,
        stderr: String,
    },
    #[error(
        "`{command}` did not finish within {secs} s and was killed; check `systemctl list-jobs` and systemd's health on the host"
    )]
    Hung { command: String, secs: u64 },
    #[error("cannot run `{0}`: {1}; is systemd installed and is this a systemd host?")]
    Spawn(String, std::io::Error),
}

/// The jobs refit asks of systemd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Start,
    Stop,
    Restart,
}

impl Job {
    pub fn verb(self) -> &'static str {
        match self {
            Job::Start => "start",
            Job::Stop => "stop",
            Job::Restart => "restart",
        }
    }
}

/// Why a start left `st` down: the units it requires that are not up (failed, inactive, or
/// between restarts), with their state and result, or its own result when none is to blame.
pub fn why_down(systemd: &dyn Systemd, st: &UnitStatus) -> String {
    let reqs = st.requirements();
    let blamed: Vec<String> = systemd
        .show(&reqs)
        .unwrap_or_default()
        .iter()
        .filter(|r| {
            let done_oneshot = r.get("Type") == "oneshot" && r.active_state() == "inactive";
            r.active_state() != "active" && !done_oneshot
        })
        .map(|r| {
            format!(
                "{} is {}/{} (Result={})",
                r.name,
                r.active_state(),
                r.get("SubState"),
                r.get("Result")
            )
        })
        .collect();
    if blamed.is_empty() {
        format!(
            "its start job ended with it {} (Result={})",
            st.active_state(),
            st.get("Result")
        )
    } else {
        format!(
            "its start job ended with it {}, because a dependency failed: {}",
            st.active_state(),
            blamed.join(", ")
        )
    }
}

/// `Sync`, so observation can ask systemd and podman at the same time.
pub trait Systemd: Sync {
    /// One status per unit, in the order asked; unknown units come back `not-found`.
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError>;
    fn daemon_reload(&self) -> Result<(), SystemdError>;
    /// Queues a job without waiting for it: refit observes the result itself, with its own
    /// deadline, instead of trusting the job's return (which is rc 0 for a crashing image).
    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError>;
    /// Runs a job and waits for systemd to finish it.
    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError>;
    /// `run_job`, waited for at most `bound`: false when the bound came first (the job goes on
    /// in systemd, and the caller's own look decides).
    fn run_job_within(
        &self,
        job: Job,
        units: &[String],
        _bound: std::time::Duration,
    ) -> Result<bool, SystemdError> {
        self.run_job(job, units).map(|()| true)
    }
    /// Clears the units' failed state and start limit; no units, nothing (never all of them).
    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError>;
    /// The last `lines` journal lines of a unit, for failure messages. Never fails.
    fn journal_tail(&self, unit: &str, lines: usize) -> String;
}
