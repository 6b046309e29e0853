//! Why a run's change did not go through, and what became of each target it had touched: the
//! typed errors of `apply`, whose text is the module's failure message.

use super::UnitError;
use std::fmt;

/// Why a target's change did not go through.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A service did not converge on the new revision.
    #[error("{service}: revision {revision} with image {image} did not converge: {why}")]
    NotConverged {
        service: String,
        revision: String,
        image: String,
        why: String,
    },
    /// A call to systemd, podman or the state dir failed on the way.
    #[error("{unit}: {source}")]
    Step {
        unit: String,
        #[source]
        source: UnitError,
    },
}

/// What was done about a failed target.
#[derive(Debug)]
pub enum Aftermath {
    /// `rollback: false`: the target was left as the failure found it.
    LeftAsIs,
    /// The rollback's own account: rolled back, stopped, or why it could not be.
    RolledBack(String),
}

impl fmt::Display for Aftermath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aftermath::LeftAsIs => f.write_str("rollback is off, so it was left as it is."),
            Aftermath::RolledBack(note) => f.write_str(note),
        }
    }
}

/// The tail of a service's journal, for the failure message; nothing when it is empty.
#[derive(Debug)]
pub struct Journal {
    pub service: String,
    pub text: String,
}

impl fmt::Display for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.trim().is_empty() {
            return Ok(());
        }
        write!(f, "\nJournal of {}:\n{}", self.service, self.text)
    }
}

/// A target that failed: why, what was done about it, and the journal of its service.
#[derive(Debug, thiserror::Error)]
#[error("{cause}. {aftermath}{journal}")]
pub struct TargetFailed {
    #[source]
    pub cause: Box<ApplyError>,
    pub aftermath: Aftermath,
    pub journal: Journal,
}

/// A run that failed: the target that failed, and each target the run had changed before it,
/// rolled back too, newest first, with the rollback's account.
#[derive(Debug, thiserror::Error)]
pub struct RunFailed {
    #[source]
    pub failed: Box<TargetFailed>,
    pub also_rolled_back: Vec<UnitNote>,
    /// In a flow's recovery, which goes on past a failure: the later units that failed too.
    pub also_failed: Vec<String>,
}

/// A unit a failed run also rolled back, and the rollback's account of it.
#[derive(Debug)]
pub struct UnitNote {
    pub unit: String,
    pub note: String,
}

impl fmt::Display for RunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.failed)?;
        for other in &self.also_failed {
            write!(f, "\nAnother unit could not go back either: {other}")?;
        }
        if self.also_rolled_back.is_empty() {
            return Ok(());
        }
        f.write_str("\nUnits this run had already changed are rolled back too:")?;
        for other in &self.also_rolled_back {
            write!(f, "\n- {}: {}", other.unit, other.note)?;
        }
        Ok(())
    }
}
