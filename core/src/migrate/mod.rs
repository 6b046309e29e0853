//! `run_migrations`: a migration command in a one-off container, run only when pending.
//!
//! "Pending" means: no stamp for (image ID, command) exists, and a `check_command`, if given,
//! does not report nothing pending. A stamp is written atomically after success, and never
//! after a failure, so a second run with the same image starts no container at all.

mod source;
pub mod spec;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::podman::{Finished, OneOff, PodmanError};
use crate::state::{StateDir, StateError, atomic_write, read_optional};
use crate::unit::name::NameError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub unit: Option<String>,
    pub image: Option<String>,
    #[serde(default)]
    pub volumes: Vec<String>,
    #[serde(default)]
    pub env: Map<String, Value>,
    pub network: Option<String>,
    pub command: Vec<String>,
    pub check_command: Option<Vec<String>>,
    pub timeout: u64,
    pub quadlet_dir: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(
        "{0} is an empty list; give the command as a list of words, for example [manage, migrate]"
    )]
    EmptyCommand(&'static str),
    #[error("{0} contains a newline; give each word on one line")]
    Newline(&'static str),
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error(
        "image {0} is not present locally; fetch it first (container_unit state=present, or podman load)"
    )]
    ImageMissing(String),
    #[error(
        "the migration timed out after {secs} s; the container was killed and removed. Last output:\n{tail}"
    )]
    Timeout { secs: u64, tail: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Podman(#[from] PodmanError),
}

/// The record of a migration that ran (or was found not pending) for one image.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stamp {
    pub source: String,
    pub command: Vec<String>,
    pub image_id: String,
    /// `migrated`, or `not_pending` when the check command said so.
    pub outcome: String,
    pub recorded_at: String,
}

#[derive(Debug, Default, Serialize)]
struct Report {
    ran: bool,
    skipped_reason: Option<String>,
    rc: Option<i64>,
    stdout_tail: Option<String>,
    image_id: Option<String>,
    stamp: String,
    duration_ms: u64,
}

/// How many lines of output a result carries.
const TAIL_LINES: usize = 20;

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, MigrateError> {
    let t0 = Instant::now();
    check_words("command", &p.command)?;
    if let Some(c) = &p.check_command {
        check_words("check_command", c)?;
    }
    let mut oneoff = source::oneoff(&p)?;
    let state = StateDir::new(&p.state_dir);
    let key = stamp_key(&oneoff.source, &p.command);
    let stamp_path = state.path(&format!("migrations/{key}.json"));
    let mut report = Report {
        stamp: stamp_path.display().to_string(),
        ..Report::default()
    };
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock(&format!("run_migrations {}", oneoff.source))?)
    };
    let image_id = host
        .podman
        .image_id(&oneoff.spec.image)?
        .ok_or_else(|| MigrateError::ImageMissing(oneoff.spec.image.clone()))?;
    // Run by ID: a tag that moves during the run cannot change what is migrated.
    oneoff.spec.image = image_id.clone();
    report.image_id = Some(image_id.clone());
    let finish = |mut report: Report, changed: bool, msg: String| {
        report.duration_ms = t0.elapsed().as_millis() as u64;
        Ok(Outcome::new(changed, msg).with_data(report))
    };

    if let Some(stamp) = load_stamp(&stamp_path)?
        && stamp.image_id == image_id
    {
        report.skipped_reason = Some(format!(
            "already {} for image {}",
            stamp.outcome.replace('_', " "),
            short(&image_id)
        ));
        let msg = format!(
            "{}: nothing pending ({})",
            oneoff.source,
            report.skipped_reason.as_deref().unwrap_or("")
        );
        return finish(report, false, msg);
    }
    if inv.check_mode {
        let msg = match &p.check_command {
            Some(_) => format!(
                "{}: would run the check command, and the migration if it reports pending work",
                oneoff.source
            ),
            None => format!(
                "{}: would run the migration for image {}",
                oneoff.source,
                short(&image_id)
            ),
        };
        return finish(report, true, msg);
    }
    let timeout = Duration::from_secs(p.timeout);
    let stamp = |outcome: &str| Stamp {
        source: oneoff.source.clone(),
        command: p.command.clone(),
        image_id: image_id.clone(),
        outcome: outcome.to_string(),
        recorded_at: crate::time::now_rfc3339(),
    };
    if let Some(check) = &p.check_command {
        let spec = OneOff {
            command: check.clone(),
            ..oneoff.spec.clone()
        };
        if let Finished::Exited(r) = host.podman.run_oneoff(&spec, timeout)?
            && r.rc == 0
        {
            save_stamp(&state, &stamp_path, &stamp("not_pending"))?;
            report.skipped_reason = Some("check_command reports nothing pending".into());
            let msg = format!("{}: nothing pending, says the check command", oneoff.source);
            return finish(report, false, msg);
        }
    }
    let spec = OneOff {
        command: p.command.clone(),
        ..oneoff.spec.clone()
    };
    match host.podman.run_oneoff(&spec, timeout)? {
        Finished::TimedOut { output } => Err(MigrateError::Timeout {
            secs: p.timeout,
            tail: tail(&output),
        }),
        Finished::Exited(r) => {
            report.ran = true;
            report.rc = Some(r.rc);
            report.stdout_tail = Some(tail(&r.output));
            if r.rc != 0 {
                report.duration_ms = t0.elapsed().as_millis() as u64;
                let msg = format!(
                    "{}: the migration exited {}; nothing was recorded, so the next run tries again. Last output:\n{}",
                    oneoff.source,
                    r.rc,
                    tail(&r.output)
                );
                return Ok(Outcome::new(true, "").with_data(report).failed(msg));
            }
            save_stamp(&state, &stamp_path, &stamp("migrated"))?;
            let msg = format!("{}: migrated for image {}", oneoff.source, short(&image_id));
            finish(report, true, msg)
        }
    }
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

fn stamp_key(source: &str, command: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for w in command {
        h.update([0]);
        h.update(w.as_bytes());
    }
    let safe: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest: String = h
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{safe}-{digest}")
}

fn load_stamp(path: &std::path::Path) -> Result<Option<Stamp>, StateError> {
    match read_optional(path)? {
        None => Ok(None),
        Some(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| StateError::Corrupt {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
    }
}

fn save_stamp(state: &StateDir, path: &std::path::Path, stamp: &Stamp) -> Result<(), StateError> {
    state.ensure("migrations")?;
    atomic_write(
        path,
        &serde_json::to_vec_pretty(stamp).unwrap_or_default(),
        0o600,
    )
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

fn short(id: &str) -> &str {
    crate::converge::short(id)
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, MigrateError> {
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    run(p, inv, &Host::real(&podman))
}
