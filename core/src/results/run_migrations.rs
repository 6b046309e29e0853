//! `run_migrations`'s result: one `MigrationResult`, or a list of them in a `BatchResult`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MigrationResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub ran: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<String>,
    /// Why it did not run; None when it ran, or failed.
    pub skipped_reason: Option<String>,
    pub rc: Option<i64>,
    pub stdout_tail: Option<String>,
    pub image_id: Option<String>,
    /// The stamp file's path.
    pub stamp: String,
    pub duration_ms: u64,
}

/// One migration of a flow, judged before anything is stopped.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Judgement {
    /// The unit (or image) the migration is for.
    pub source: String,
    pub pending: bool,
    pub msg: String,
}

/// A `migrations` run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BatchResult {
    pub migrations: Vec<MigrationResult>,
    /// How many of them ran.
    pub ran: usize,
    pub duration_ms: u64,
}

/// Either form, as a reader meets it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RunMigrationsResult {
    Batch(BatchResult),
    One(MigrationResult),
}

impl RunMigrationsResult {
    pub fn migrations(&self) -> &[MigrationResult] {
        match self {
            RunMigrationsResult::Batch(b) => &b.migrations,
            RunMigrationsResult::One(m) => std::slice::from_ref(m),
        }
    }
}
