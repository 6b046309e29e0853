//! One target's part of a run: the unit it asks for, what the host had, the plan between them
//! and the report being written. prepare.rs makes it, apply.rs carries it out, and secrets.rs,
//! retention.rs and adopt.rs tidy up after it.

use super::observe::Observation;
use super::report::Report;
use super::target::{Target, TargetPlan};

pub struct Work {
    pub target: Target,
    pub observed: Observation,
    pub plan: TargetPlan,
    pub report: Report,
}
