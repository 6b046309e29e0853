//! `flow_state`'s result.

use super::container_unit::ContainerUnitResult;
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
    /// `begin`: the plan of every unit, from the fetch it did (container_unit's check-mode
    /// result). None for the other actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ContainerUnitResult>,
}
