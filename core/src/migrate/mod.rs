//! `run_migrations`: a migration command in a one-off container, run only when pending.
//!
//! "Pending" means: no stamp for (image ID, command) exists, and a `check_command`, if given,
//! does not report nothing pending. A stamp is written atomically after success, and never
//! after a failure, so a second run with the same image starts no container at all.
//!
//! A pending migration's container is created before its services stop and removed after they
//! started again, so that they are down for the migration and their start only (`run_one`).

pub mod backup;
mod source;
pub mod spec;
mod staged;
mod start_again;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::podman::{Ended, Finished, Guard, OneOff, PodmanError, Prepared};
pub use crate::results::run_migrations::Judgement;
use crate::results::run_migrations::{BatchResult, MigrationResult};
use crate::state::{StateDir, StateError, read_json, write_json};
use crate::unit::name::NameError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// The spec's default, for parameters built without it (container_unit's default too).
pub const DEFAULT_MIN_HEALTHY_TIME: i64 = 1000;

fn default_min_healthy_time() -> u64 {
    DEFAULT_MIN_HEALTHY_TIME.unsigned_abs()
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{0} is not a variable name; use letters, digits and '_', not starting with a digit")]
    EnvName(String),
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
    #[error(transparent)]
    Stop(#[from] crate::stop_services::StopError),
    #[error(transparent)]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error("stage name {0:?} must be a plain name: letters, digits, - and _")]
    BadStage(String),
    #[error(transparent)]
    Backup(#[from] backup::BackupError),
    #[error(
        "backup needs stop_first: true, so that nothing writes after the backup and a failed run's recovery can find it"
    )]
    BackupNeedsStop,
    #[error("stop_first needs `unit`: with only an image there is no service to stop")]
    StopNeedsUnit,
    #[error("start_after needs stop_first: true; without it nothing is stopped to start again")]
    StartNeedsStop,
    #[error(
        "{service} was started again after its migration, but {why}; look at `journalctl -u {service}`: the flow's recovery puts the previous release back"
    )]
    NotServing { service: String, why: String },
    #[error(
        "{origin}: the podman secret {secret} its unit needs is gone; deploy the unit again (container_unit with its secret_env) first"
    )]
    SecretGone { origin: String, secret: String },
    /// An error in one parameter (or one `migrations` entry), named by its path.
    #[error("{at}: {inner}")]
    In {
        at: String,
        inner: Box<MigrateError>,
    },
}

impl MigrateError {
    fn within(self, at: &str) -> MigrateError {
        match self {
            MigrateError::In {
                at: inner_at,
                inner,
            } => MigrateError::In {
                at: format!("{at}.{inner_at}"),
                inner,
            },
            other => MigrateError::In {
                at: at.to_string(),
                inner: Box::new(other),
            },
        }
    }
}

/// The call's migrations: its list, or else its one at the top level.
fn migrations(p: &Params) -> &[Migration] {
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
        (None, None) => return Err(MigrateError::Source(source::SourceError::NoSource)),
    }
    Ok(())
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

/// What one migration reports.
type Report = MigrationResult;

/// How many lines of output a result carries.
const TAIL_LINES: usize = 20;

/// What one migration did: its report, whether it changed anything, and its message, or the
/// failure that ends the run.
struct Done {
    report: Report,
    changed: bool,
    msg: String,
    failed: bool,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, MigrateError> {
    let t0 = Instant::now();
    let batch = !p.migrations.is_empty();
    let list = if batch {
        p.migrations.clone()
    } else {
        vec![p.one.clone()]
    };
    validate(&p)?;
    let state = StateDir::new(&p.state_dir);
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run("run_migrations", p.run_id.as_deref(), host.clock)?)
    };
    if p.restore {
        return restore(&p, inv, host, &state, t0);
    }
    // The values of the units' secrets, once read for a run: masked like parameters.
    let mut revealed = Vec::new();
    let mut done = Vec::with_capacity(list.len());
    for m in &list {
        let d = match run_one(m, &p, inv, host, &state, &mut revealed) {
            Ok(d) => d,
            // An error may quote a migration's output (a timeout's tail), and a migration may
            // print the secrets it was given: a failed result carries them to be masked, as
            // a finished one does.
            Err(e) if !revealed.is_empty() => {
                let mut out = Outcome::default().failed(e.to_string());
                out.mask_also = revealed;
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        let failed = d.failed;
        done.push(d);
        if failed {
            break;
        }
    }
    let changed = done.iter().any(|d| d.changed);
    let failed = done.iter().find(|d| d.failed).map(|d| d.msg.clone());
    let msg = done
        .iter()
        .map(|d| d.msg.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let mut out = if batch {
        let data = BatchResult {
            ran: done.iter().filter(|d| d.report.ran).count(),
            migrations: done.into_iter().map(|d| d.report).collect(),
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        Outcome::new(changed, msg).with_data(data)
    } else {
        let mut d = done.remove(0);
        d.report.duration_ms = t0.elapsed().as_millis() as u64;
        Outcome::new(changed, msg).with_data(d.report)
    };
    if let Some(f) = failed {
        out = out.failed(f);
    }
    out.mask_also = revealed;
    Ok(out)
}

/// A migration found pending, with what running it needs.
struct Ready {
    oneoff: source::Source,
    image_id: String,
    /// The check command said so (now, or earlier in this run for this image).
    checked: bool,
    stamp_path: PathBuf,
    report: Report,
    t0: Instant,
}

/// A migration either decided without running it (nothing pending, or check mode), or pending.
enum Judged {
    Decided(Box<Done>),
    Pending(Box<Ready>),
}

/// Whether one migration is pending for the image its unit is about to run, decided without
/// stopping anything: its stamp first, then its check command (which stamps `not_pending`).
/// `checked_pending`: the image ID for which this run's first call already ran the check command
/// and found work. The check is not run twice for one image: Pulp's takes seconds.
fn judge(
    m: &Migration,
    p: &Params,
    inv: &Invocation,
    host: &Host,
    state: &StateDir,
    revealed: &mut Vec<String>,
    checked_pending: Option<&str>,
) -> Result<Judged, MigrateError> {
    let t0 = Instant::now();
    let coming = m
        .unit
        .as_deref()
        .and_then(|u| p.images.get(u.trim_end_matches(".container")));
    let staged = staged::text(m, p, state)?;
    let mut oneoff = source::oneoff(m, &p.quadlet_dir, coming.map(String::as_str), staged)?;
    let key = stamp_key(&oneoff.source, &m.command);
    let stamp_path = state.migration_stamp(&key);
    let mut report = Report {
        unit: m.unit.clone(),
        stamp: stamp_path.display().to_string(),
        ..Report::default()
    };
    let decided = |mut report: Report, changed: bool, msg: String| {
        report.duration_ms = t0.elapsed().as_millis() as u64;
        Ok(Judged::Decided(Box::new(Done {
            report,
            changed,
            msg,
            failed: false,
        })))
    };
    // A new image held off the unit's tag until its install is the one it is about to run.
    let held = staged::held(m, p, state)?.map(|h| h.id);
    let image_id = match host
        .podman
        .image_id(held.as_deref().unwrap_or(&oneoff.spec.image))?
    {
        Some(id) => id,
        // In check mode the fetch pulled nothing; an image still to come has no stamp yet.
        None if inv.check_mode => {
            let msg = format!(
                "{}: would run the migration, with {} once pulled",
                oneoff.source, oneoff.spec.image
            );
            return decided(report, true, msg);
        }
        None => return Err(MigrateError::ImageMissing(oneoff.spec.image.clone())),
    };
    // Run by ID: a tag that moves during the run cannot change what is migrated.
    oneoff.spec.image = image_id.clone();
    report.image_id = Some(image_id.clone());

    if let Some(stamp) = load_stamp(&stamp_path)?
        && stamp.image_id == image_id
    {
        let why = format!(
            "already {} for image {}",
            stamp.outcome.replace('_', " "),
            short(&image_id)
        );
        let msg = format!("{}: nothing pending ({why})", oneoff.source);
        report.skipped_reason = Some(why);
        return decided(report, false, msg);
    }
    if inv.check_mode {
        let msg = match &m.check_command {
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
        return decided(report, true, msg);
    }
    // The unit's secrets reach the one-off container as env, read only now that it runs.
    for (secret, var) in &oneoff.secrets {
        let value = host
            .podman
            .secret_value(secret)?
            .ok_or_else(|| MigrateError::SecretGone {
                origin: oneoff.source.clone(),
                secret: secret.clone(),
            })?;
        oneoff.spec.env.push(format!("{var}={value}"));
        revealed.push(value);
    }
    let checked = m.check_command.is_some();
    if let Some(check) = m
        .check_command
        .as_ref()
        .filter(|_| checked_pending != Some(image_id.as_str()))
    {
        let spec = OneOff {
            command: check.clone(),
            ..oneoff.spec.clone()
        };
        let timeout = Duration::from_secs(p.timeout);
        if let Finished::Exited(r) = host.podman.run_oneoff(&spec, timeout)?
            && r.rc == 0
        {
            let stamp = new_stamp(&oneoff.source, m, &image_id, "not_pending");
            save_stamp(state, &stamp_path, &stamp)?;
            report.skipped_reason = Some("check_command reports nothing pending".into());
            let msg = format!("{}: nothing pending, says the check command", oneoff.source);
            return decided(report, false, msg);
        }
    }
    Ok(Judged::Pending(Box::new(Ready {
        oneoff,
        image_id,
        checked,
        stamp_path,
        report,
        t0,
    })))
}

/// A migration as the deployment names it (its unit, or else its image), so a plan can set it
/// beside its unit and a later call find it again.
fn named_source(m: &Migration) -> String {
    m.unit
        .clone()
        .or_else(|| m.image.clone())
        .unwrap_or_default()
}

fn new_stamp(source: &str, m: &Migration, image_id: &str, outcome: &str) -> Stamp {
    Stamp {
        source: source.to_string(),
        command: m.command.clone(),
        image_id: image_id.to_string(),
        outcome: outcome.to_string(),
        recorded_at: crate::time::now_rfc3339(),
    }
}

/// Judges every migration without running or stopping anything: what a flow's first call
/// needs to decide whether there is work. A pending one is judged again when it runs.
pub fn judge_all(
    p: &Params,
    inv: &Invocation,
    host: &Host,
) -> Result<(Vec<Judgement>, Vec<String>), MigrateError> {
    validate(p)?;
    let state = StateDir::new(&p.state_dir);
    let list = migrations(p);
    let mut revealed = Vec::new();
    let mut out = Vec::with_capacity(list.len());
    for m in list {
        let source = named_source(m);
        out.push(match judge(m, p, inv, host, &state, &mut revealed, None)? {
            Judged::Decided(d) => Judgement {
                source,
                pending: d.changed,
                msg: d.msg,
                image_id: d.report.image_id.clone(),
                checked: false,
            },
            Judged::Pending(r) => Judgement {
                msg: format!(
                    "{}: pending for image {}",
                    r.oneoff.source,
                    short(&r.image_id)
                ),
                source,
                pending: true,
                image_id: Some(r.image_id.clone()),
                checked: r.checked,
            },
        });
    }
    Ok((out, revealed))
}

/// Runs one migration if it is pending, in the order that keeps its services' downtime to the
/// migration itself and their start (issue 15): the container is created while they still
/// serve, then they stop (and are backed up), the migration runs, they start again, and only
/// then is the container removed. If the create fails, nothing is stopped; whatever fails
/// after it, the container is removed.
fn run_one(
    m: &Migration,
    p: &Params,
    inv: &Invocation,
    host: &Host,
    state: &StateDir,
    revealed: &mut Vec<String>,
) -> Result<Done, MigrateError> {
    let checked_pending = p.checked_pending.get(&named_source(m)).map(String::as_str);
    let ready = match judge(m, p, inv, host, state, revealed, checked_pending)? {
        Judged::Decided(d) => return Ok(*d),
        Judged::Pending(r) => *r,
    };
    let stop_record = crate::stop_services::record_path(state, &p.stop_record)?;
    backup::forget_finished(state, &p.stop_record, &stop_record)?;
    let spec = OneOff {
        command: m.command.clone(),
        ..ready.oneoff.spec.clone()
    };
    // The guard removes the container on every early return, and on a panic.
    let container = Guard::new(host.podman, host.podman.prepare_oneoff(&spec)?);
    let done = migrate_prepared(m, p, host, state, &stop_record, ready, container.prepared());
    let removed = container.remove();
    let done = done?;
    removed?;
    Ok(done)
}

/// A pending migration whose container is prepared: stops its services, backs up, runs it,
/// and starts them again, leaving the container for the caller to remove.
fn migrate_prepared(
    m: &Migration,
    p: &Params,
    host: &Host,
    state: &StateDir,
    stop_record: &std::path::Path,
    mut ready: Ready,
    container: &Prepared,
) -> Result<Done, MigrateError> {
    let timeout = Duration::from_secs(p.timeout);
    if p.stop_first {
        // Pending, so the service and what needs it stop before the schema changes under them.
        let how = crate::stop_services::StopOptions {
            dependents: true,
            missing_ok: staged::only_staged(m, p, state)?,
            check: false,
            start: host.clock.now(),
            deadline: timeout,
        };
        let stopped = crate::stop_services::stop_set(
            &stop_host(host),
            state,
            stop_record,
            std::slice::from_ref(&ready.oneoff.source),
            &how,
        )?;
        ready.report.stopped = stopped.stopped;
    }
    // With its services stopped, nothing writes after the backup that a restore would lose.
    if let Some(b) = &m.backup {
        let origin = backup::For {
            source: &ready.oneoff.source,
            migration: &named_source(m),
            stamp: &ready.stamp_path,
        };
        let taken = backup::take(b, &origin, host, state, &p.stop_record, timeout)?;
        ready.report.backup = Some(Box::new(taken));
    }
    let migrating = crate::progress::step(format!("migrating {}", named_source(m)), Some(timeout));
    let ended = host.podman.run_prepared(container, timeout)?;
    drop(migrating);
    match ended {
        Ended::TimedOut => Err(MigrateError::Timeout {
            secs: p.timeout,
            tail: tail(&host.podman.oneoff_output(container)),
        }),
        Ended::Exited { rc } => exited(m, p, host, state, ready, container, rc),
    }
}

/// A migration that ran to its exit: a failure is reported and stamps nothing; a success is
/// stamped, and what it stopped starts again at once (`start_after`), before its output is
/// read: the log is for the report, the exit code was enough to decide.
fn exited(
    m: &Migration,
    p: &Params,
    host: &Host,
    state: &StateDir,
    ready: Ready,
    container: &Prepared,
    rc: i64,
) -> Result<Done, MigrateError> {
    let Ready {
        oneoff,
        image_id,
        stamp_path,
        mut report,
        t0,
        ..
    } = ready;
    let finish = |mut report: Report, changed: bool, msg: String, failed: bool| {
        report.duration_ms = t0.elapsed().as_millis() as u64;
        Ok(Done {
            report,
            changed,
            msg,
            failed,
        })
    };
    report.ran = true;
    report.rc = Some(rc);
    if rc != 0 {
        let output = tail(&host.podman.oneoff_output(container));
        let msg = format!(
            "{}: the migration exited {rc}; nothing was recorded, so the next run tries again. Last output:\n{output}",
            oneoff.source,
        );
        report.stdout_tail = Some(output);
        return finish(report, true, msg, true);
    }
    let stamp = new_stamp(&oneoff.source, m, &image_id, "migrated");
    save_stamp(state, &stamp_path, &stamp)?;
    // Stamped first: a power loss before the install boots the old text on the migrated data,
    // which the next run does not migrate again, and its start phase installs.
    report.installed = staged::install(m, p, host, state)?;
    // Up again at once: no service waits for another's migration, nor for the removal.
    if p.start_after && !report.stopped.is_empty() {
        let timeout = Duration::from_secs(p.timeout);
        let min_healthy = Duration::from_millis(p.min_healthy_time);
        report.started = start_again::start_again(host, &report.stopped, timeout, min_healthy)?;
    }
    report.stdout_tail = Some(tail(&host.podman.oneoff_output(container)));
    let adopted = if container.adopted {
        " (by the container an interrupted run had started, which this run waited for)"
    } else {
        ""
    };
    let started = if report.started.is_empty() {
        String::new()
    } else {
        format!(", then started {}", report.started.join(", "))
    };
    let installed = if report.installed {
        ", installed its new revision"
    } else {
        ""
    };
    let msg = format!(
        "{}: migrated for image {}{adopted}{installed}{started}",
        oneoff.source,
        short(&image_id)
    );
    finish(report, true, msg, false)
}

/// The part of the host `stop_services` works on.
fn stop_host<'a>(host: &Host<'a>) -> crate::stop_services::Host<'a> {
    crate::stop_services::Host {
        systemd: host.systemd,
        clock: host.clock,
    }
}

/// `restore: true`: puts back the backups this run took, when it is unfinished (its stop
/// record is there), so the previous release starts on the schema it knows.
fn restore(
    p: &Params,
    inv: &Invocation,
    host: &Host,
    state: &StateDir,
    t0: Instant,
) -> Result<Outcome, MigrateError> {
    let stop_record = crate::stop_services::record_path(state, &p.stop_record)?;
    if inv.check_mode {
        return Ok(Outcome::new(
            false,
            "check mode: restores nothing".to_string(),
        ));
    }
    let timeout = Duration::from_secs(p.timeout);
    // A flow starts each migrated service again right after its migration, so by the time it
    // fails they may run, and write, on the migrated schema: they stop before their data goes
    // back. The recovery's later steps start them on the previous revision.
    if backup::has_restore(state, &p.stop_record, &stop_record)? {
        crate::stop_services::stop_recorded(
            &stop_host(host),
            &stop_record,
            host.clock.now(),
            timeout,
        )?;
    }
    let envs: backup::EnvByMigration = migrations(p)
        .iter()
        .filter_map(|m| Some((named_source(m), m.backup.as_ref()?.env_words())))
        .collect();
    let restored = backup::restore(host, state, &p.stop_record, &stop_record, &envs, timeout)?;
    let msg = if restored.is_empty() {
        format!(
            "no backup to restore: run {} took none, or finished",
            p.stop_record
        )
    } else {
        let dirs: Vec<&str> = restored.iter().map(|t| t.dir.as_str()).collect();
        format!("restored {}", dirs.join(", "))
    };
    let data = crate::results::run_migrations::RestoreResult {
        duration_ms: t0.elapsed().as_millis() as u64,
        restored,
    };
    Ok(Outcome::new(!data.restored.is_empty(), msg).with_data(data))
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
    let digest = crate::unit::revision::hex(&h.finalize()[..8]);
    format!("{safe}-{digest}")
}

fn load_stamp(path: &std::path::Path) -> Result<Option<Stamp>, StateError> {
    read_json(path)
}

fn save_stamp(state: &StateDir, path: &std::path::Path, stamp: &Stamp) -> Result<(), StateError> {
    state.ensure_parent(path)?;
    write_json(path, stamp, 0o600)
}

pub(crate) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

fn short(id: &str) -> &str {
    crate::converge::short(id)
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, MigrateError> {
    // Every parameter is checked before the first podman call.
    validate(&p)?;
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    let registry = crate::registry::HttpRegistry::from_host();
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    run(p, inv, &Host::real(&podman, &registry, &systemd))
}

#[cfg(test)]
mod run_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakePodman, FakeSystemd};
    use serde_json::json;

    /// A unit `app` whose container takes the podman secret `refit-app-pw-1` (hunter22) as PW,
    /// and a run of its migration with the parameters `extra` added, on `podman`.
    fn run_with_a_secret(podman: &mut FakePodman, extra: serde_json::Value) -> serde_json::Value {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = dir.path().join("quadlet");
        std::fs::create_dir_all(&q).expect("mkdir");
        std::fs::write(
            q.join("app.container"),
            "[Container]\nImage=svc:1\nSecret=refit-app-pw-1,type=env,target=PW\n",
        )
        .expect("write");
        podman.oneoff_prints_env = true;
        podman.images.insert("svc:1".into(), "img-1".into());
        podman.secrets.lock().expect("secrets").insert(
            "refit-app-pw-1".into(),
            ("app.container".into(), "hunter22".into()),
        );
        let mut args = json!({
            "unit": "app", "command": ["migrate"],
            "quadlet_dir": q, "state_dir": dir.path().join("state"),
        });
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        let systemd = FakeSystemd::default();
        crate::testing::respond_on(&spec::SPEC, dir.path(), &args, &systemd, &*podman, run).out
    }

    /// Issue 14: the unit's env secrets reach the one-off container, read from podman when it
    /// runs, and their values are masked in the result, output tail included.
    #[test]
    fn a_units_secrets_reach_the_migration_and_stay_masked() {
        let mut podman = FakePodman::default();
        let out = run_with_a_secret(&mut podman, json!({"secret_env": {"TOKEN": "tok-secret"}}));
        assert_eq!(out["ran"], json!(true), "{out}");
        let env = podman.oneoffs.lock().expect("oneoffs")[0].env.clone();
        assert!(env.contains(&"PW=hunter22".to_string()), "{env:?}");
        assert!(env.contains(&"TOKEN=tok-secret".to_string()), "{env:?}");
        let text = out.to_string();
        assert!(
            !text.contains("hunter22") && !text.contains("tok-secret"),
            "{text}"
        );
    }

    /// A timeout's error quotes the migration's output, which printed the unit's secret.
    #[test]
    fn a_timed_out_migrations_output_is_masked_in_its_error() {
        let mut podman = FakePodman {
            oneoff_times_out: true,
            ..FakePodman::default()
        };
        let out = run_with_a_secret(&mut podman, json!({}));
        assert_eq!(out["failed"], json!(true), "{out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains("timed out") && msg.contains("PW="), "{msg}");
        assert!(!out.to_string().contains("hunter22"), "{out}");
    }

    #[test]
    fn bad_input_is_refused_by_parameter_before_podman_is_asked() {
        let p = |v: serde_json::Value| -> Params {
            let mut base = json!({
                "stop_first": false, "stop_record": "default", "timeout": 1,
                "quadlet_dir": "/q", "state_dir": "/s", "podman_socket": "/nonexistent",
            });
            for (k, x) in v.as_object().expect("object") {
                base[k] = x.clone();
            }
            serde_json::from_value(base).expect("params")
        };
        let cases = [
            (
                json!({"unit": "app", "command": []}),
                "command is an empty list",
            ),
            (
                json!({"migrations": [{"unit": "app", "command": ["m"]}, {"unit": "../x", "command": ["m"]}]}),
                "migrations[1].unit: unit name",
            ),
            (
                json!({"image": "Not A/Ref::", "command": ["m"]}),
                "image: image reference",
            ),
        ];
        for (args, needle) in cases {
            let err = run_on_host(p(args.clone()), &Invocation::default()).expect_err("refused");
            assert!(err.to_string().contains(needle), "{args}: {err}");
        }
    }
}
