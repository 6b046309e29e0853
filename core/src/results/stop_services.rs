//! `stop_services`'s result.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StopResult {
    pub stopped: Vec<String>,
    pub already_inactive: Vec<String>,
    pub started: Vec<String>,
    pub already_active: Vec<String>,
    pub order: Vec<String>,
    /// The stop record's path.
    pub record: String,
    pub duration_ms: u64,
}
