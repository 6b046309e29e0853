//! `run_migrations`'s result: one `MigrationResult`, or a list of them in a `BatchResult`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MigrationResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub ran: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<String>,
    /// What `start_after` started again once the migration had run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub started: Vec<String>,
    /// Its unit's new text or held image, staged by the flow's preflight, was installed after
    /// it ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub installed: bool,
    /// Why it did not run; None when it ran, or failed.
    pub skipped_reason: Option<String>,
    pub rc: Option<i64>,
    pub stdout_tail: Option<String>,
    pub image_id: Option<String>,
    /// The stamp file's path.
    pub stamp: String,
    pub duration_ms: u64,
    /// The backup taken before the migration ran, when it has a `backup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<Box<BackupTaken>>,
}

/// One backup taken before a migration: what the result reports and what a restore needs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackupTaken {
    /// The migration it was taken for.
    pub source: String,
    pub stream: String,
    /// Its directory under the state dir, mounted at /backup in its containers.
    pub dir: String,
    pub image: String,
    pub volumes: Vec<String>,
    pub network: Option<String>,
    pub env: Vec<String>,
    pub restore_command: Vec<String>,
    pub created_at: String,
    pub duration_ms: u64,
    pub size_bytes: u64,
}

/// A `restore=true` run: the backups it put back, newest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RestoreResult {
    pub restored: Vec<BackupTaken>,
    pub duration_ms: u64,
}

/// One migration of a flow, judged before anything is stopped.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Judgement {
    /// The unit (or image) the migration is for.
    pub source: String,
    pub pending: bool,
    pub msg: String,
    /// The image it was judged on, when present locally.
    #[serde(default)]
    pub image_id: Option<String>,
    /// Pending because its check command said so: run_migrations need not ask it again.
    #[serde(default)]
    pub checked: bool,
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
