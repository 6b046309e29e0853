//! `flow_state`'s result.

use super::container_unit::ContainerUnitResult;
use super::run_migrations::Judgement;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FlowStateResult {
    /// The stream recorded before this run.
    pub recorded_stream: Option<String>,
    pub stream: Option<String>,
    pub resumed: bool,
    pub loaded_images: Vec<String>,
    pub free_mb: Option<u64>,
    /// The lease file's path.
    pub lease: String,
    /// The run this call acted for: later phases of the same run name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// This run took the lease: its recovery may restore what it stopped.
    #[serde(default)]
    pub began: bool,
    /// This run (or the interrupted one it resumes) may have changed units: a checkpoint of
    /// them exists, and recovery rolls back to it.
    #[serde(default)]
    pub touched: bool,
    /// `begin` with units: the plan of every unit, as `container_unit` returns it in check mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ContainerUnitResult>,
    /// `begin` with migrations: each one judged before anything is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<Vec<Judgement>>,
    /// Whether the rest of the flow has anything to do.
    #[serde(default)]
    pub work: bool,
    /// Nothing was to do, so this call finished the flow: recorded the stream, released the
    /// lease.
    #[serde(default)]
    pub finished: bool,
    /// `begin` with `target`: the target was missing or differed, and was written (in check
    /// mode: would be).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub target_written: bool,
}
