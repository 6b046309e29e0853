//! The module's parameters, and their checks before the host is touched.

use super::{MigrateError, backup};
use crate::param_path::WithinParam;
use crate::state::StateDir;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// One migration: at the top level, or an entry of `migrations`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Migration {
    pub unit: Option<String>,
    pub image: Option<String>,
    #[serde(default)]
    pub volumes: Vec<String>,
    #[serde(default)]
    pub env: Map<String, Value>,
    #[serde(default)]
    pub secret_env: Map<String, Value>,
    pub network: Option<String>,
    #[serde(default)]
    pub command: Vec<String>,
    pub check_command: Option<Vec<String>>,
    pub backup: Option<backup::Backup>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(flatten)]
    pub one: Migration,
    #[serde(default)]
    pub migrations: Vec<Migration>,
    #[serde(default)]
    pub images: std::collections::HashMap<String, String>,
    pub stop_first: bool,
    #[serde(default)]
    pub start_after: bool,
    #[serde(default)]
    pub restore: bool,
    /// Migrations whose check command found work earlier in this run, by source: image ID.
    #[serde(default)]
    pub checked_pending: std::collections::HashMap<String, String>,
    /// When a migration's check command runs.
    #[serde(default)]
    pub checks: Checks,
    /// The instances of each template unit of `images`, by unit name (`worker@`: `[1, 2]`).
    /// As given: a list, a comma-separated string or one value, as `container_unit` reads a
    /// unit's `instances` (`instance_names` reads them).
    #[serde(default)]
    pub instances: Map<String, Value>,
    pub stop_record: String,
    /// The flow's stage (`container_unit` stage): where a migrated unit's new text waits.
    #[serde(default)]
    pub stage: Option<String>,
    pub timeout: u64,
    /// Milliseconds a service started again stays serving before it counts as back.
    #[serde(default = "default_min_healthy_time")]
    pub min_healthy_time: u64,
    /// The flow run this call is part of.
    #[serde(default)]
    pub run_id: Option<String>,
    pub quadlet_dir: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
}

/// When a migration's check command runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checks {
    /// Before anything stops, for every migration that has one.
    #[default]
    Always,
    /// Only for a migration whose unit keeps running in this run. A unit that restarts anyway
    /// (its new text or image is staged) is stopped for its migration without asking first,
    /// so the migration costs one start of the application, not two.
    WhenKept,
}

impl Checks {
    /// The parameter's value that says this.
    pub fn as_str(self) -> &'static str {
        match self {
            Checks::Always => "always",
            Checks::WhenKept => "when_kept",
        }
    }
}

impl Params {
    /// The instance names of the template `unit` in `instances`: a list of words or numbers, a
    /// comma-separated string, or one word or number, each a part of a unit name; none when
    /// the template is not listed.
    pub fn instance_names(&self, unit: &str) -> Result<Vec<String>, MigrateError> {
        let bad = || MigrateError::BadInstances(unit.to_string());
        let word = |v: &Value| match v {
            Value::String(w) => Some(w.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let names: Vec<String> = match self.instances.get(unit) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(word)
                .collect::<Option<_>>()
                .ok_or_else(bad)?,
            Some(Value::String(s)) => s.split(',').map(|w| w.trim().to_string()).collect(),
            Some(v) => vec![word(v).ok_or_else(bad)?],
        };
        for i in &names {
            crate::unit::name::validate_systemd_unit(&format!("{unit}{i}.service"))
                .map_err(|e| MigrateError::from(e).within(&format!("instances.{unit}")))?;
        }
        Ok(names)
    }
}

/// The spec's default, for parameters built without it (container_unit's default too).
pub const DEFAULT_MIN_HEALTHY_TIME: i64 = 1000;

fn default_min_healthy_time() -> u64 {
    DEFAULT_MIN_HEALTHY_TIME.unsigned_abs()
}

/// The call's migrations: its list, or else its one at the top level.
pub(super) fn migrations(p: &Params) -> &[Migration] {
    if p.migrations.is_empty() {
        std::slice::from_ref(&p.one)
    } else {
        &p.migrations
    }
}

/// Checks every parameter of every migration, before the host is touched.
pub fn validate(p: &Params) -> Result<(), MigrateError> {
    if p.start_after && !p.stop_first {
        return Err(MigrateError::StartNeedsStop);
    }
    if let Some(name) = p.stage.as_ref().filter(|s| !crate::state::is_plain_name(s)) {
        return Err(MigrateError::BadStage(name.clone()));
    }
    // Judged here, not where the record is first written: after a check container has run.
    crate::stop_services::record_path(&StateDir::new(&p.state_dir), &p.stop_record)?;
    for unit in p.instances.keys() {
        p.instance_names(unit)?;
    }
    for (i, m) in migrations(p).iter().enumerate() {
        validate_one(m, p).map_err(|e| {
            if p.migrations.is_empty() {
                e
            } else {
                e.within(&format!("migrations[{i}]"))
            }
        })?;
    }
    Ok(())
}

/// One migration against the call's own options (`stop_first`, `restore`).
fn validate_one(m: &Migration, p: &Params) -> Result<(), MigrateError> {
    let (stop_first, restore) = (p.stop_first, p.restore);
    check_words("command", &m.command)?;
    for (what, map) in [("env", &m.env), ("secret_env", &m.secret_env)] {
        if let Some(k) = map.keys().find(|k| !crate::unit::render::is_env_name(k)) {
            return Err(MigrateError::EnvName(format!("{what}.{k}")));
        }
    }
    if let Some(c) = &m.check_command {
        check_words("check_command", c)?;
    }
    if stop_first && m.unit.is_none() {
        return Err(MigrateError::StopNeedsUnit);
    }
    if m.backup.is_some() && !stop_first && !restore {
        return Err(MigrateError::BackupNeedsStop);
    }
    if let Some(b) = &m.backup {
        b.validate()
            .map_err(|e| MigrateError::from(e).within("backup"))?;
    }
    match (&m.unit, &m.image) {
        (Some(u), _) => {
            crate::unit::name::validate_systemd_unit(u)
                .map_err(|e| MigrateError::from(e).within("unit"))?;
        }
        (None, Some(image)) => {
            crate::podman::ImageRef::parse(image)
                .map_err(|e| MigrateError::Source(e.into()).within("image"))?;
        }
        (None, None) => return Err(MigrateError::Source(super::error::SourceError::NoSource)),
    }
    Ok(())
}

fn check_words(what: &'static str, words: &[String]) -> Result<(), MigrateError> {
    if words.is_empty() {
        return Err(MigrateError::EmptyCommand(what));
    }
    if words.iter().any(|w| w.contains('\n')) {
        return Err(MigrateError::Newline(what));
    }
    Ok(())
}
