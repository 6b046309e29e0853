//! One migration of a run as judging and running it see it, and what it did.

use super::{Migration, Params, Report};
use crate::ansible::Invocation;
use crate::host::Host;
use crate::state::StateDir;

/// One migration with what judging and running it read: the call's parameters, the
/// invocation, the host and its state dir, borrowed from the run. Each migration of a run that
/// runs at once with others has its own, so the secrets it reveals are its own to hand back.
pub(super) struct One<'a> {
    pub(super) m: &'a Migration,
    pub(super) p: &'a Params,
    pub(super) inv: &'a Invocation,
    pub(super) host: &'a Host<'a>,
    pub(super) state: &'a StateDir,
    /// The values of the unit's secrets this migration read, to be masked in the result.
    pub(super) revealed: Vec<String>,
}

impl<'a> One<'a> {
    pub(super) fn new(
        m: &'a Migration,
        p: &'a Params,
        inv: &'a Invocation,
        host: &'a Host<'a>,
        state: &'a StateDir,
    ) -> Self {
        One {
            m,
            p,
            inv,
            host,
            state,
            revealed: Vec::new(),
        }
    }
}

/// What one migration did: its report, whether it changed anything, and its message, or the
/// failure that ends the run.
pub(super) struct Done {
    pub(super) report: Report,
    pub(super) changed: bool,
    pub(super) msg: String,
    pub(super) failed: bool,
}
