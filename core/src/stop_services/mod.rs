//! `stop_services`: stop exactly what must stop, in reverse dependency order, and record what
//! was active so `restored` brings back exactly that set.
//!
//! The record is written *before* anything stops, and a later stop merges into it, so a run
//! killed half-way still restores everything that ran before it.

mod order;
pub mod spec;

use crate::ansible::{Invocation, Outcome};
use crate::results::stop_services::StopResult;
use crate::state::{StateDir, StateError, is_plain_name, read_json, remove_file, write_json};
use crate::systemd::{Job, Systemd, SystemdError, UnitStatus};
use crate::time::Clock;
use crate::unit::name::{NameError, validate_systemd_unit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use order::{start_order, stop_order};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    Stopped,
    Restored,
    Started,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    #[serde(default)]
    pub services: Vec<String>,
    pub state: Wanted,
    pub dependents: bool,
    pub timeout: u64,
    pub missing_ok: bool,
    pub record: String,
    /// The flow run this call is part of.
    #[serde(default)]
    pub run_id: Option<String>,
    pub state_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("the services list is empty; name at least one unit to stop")]
    Empty,
    #[error("unit {0} does not exist; check the name, or set missing_ok: true to skip it")]
    Missing(String),
    #[error(
        "{dependents} would be stopped too, since they depend on {units}; set dependents: true to stop them in order and restore them later"
    )]
    ActiveDependents { units: String, dependents: String },
    #[error("record name {0:?} must be a plain name: letters, digits, - and _")]
    BadRecord(String),
    #[error(
        "still not {wanted} after {secs} s: {units}; look at `systemctl status {first}` and raise timeout if it is just slow"
    )]
    Timeout {
        wanted: &'static str,
        secs: u64,
        units: String,
        first: String,
    },
    #[error("{unit} did not start: {why}.\nJournal of {unit}:\n{journal}")]
    StartFailed {
        unit: String,
        why: String,
        journal: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Systemd(#[from] SystemdError),
}

/// What a stop leaves behind for `restored`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StopRecord {
    pub active_before: Vec<String>,
    pub recorded_at: String,
}

/// The seams `stop_services` needs: systemd and a clock, no podman.
pub struct Host<'a> {
    pub systemd: &'a dyn Systemd,
    pub clock: &'a dyn Clock,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, StopError> {
    let t0 = Instant::now();
    let start = host.clock.now();
    if p.record.is_empty()
        || !p
            .record
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(StopError::BadRecord(p.record));
    }
    let names = p
        .services
        .iter()
        .map(|s| unit_name(s))
        .collect::<Result<Vec<_>, _>>()?;
    let state = StateDir::new(&p.state_dir);
    let record_path = record_path(&state, &p.record)?;
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run(
            &format!("stop_services {}", p.record),
            p.run_id.as_deref(),
            host.clock,
        )?)
    };
    let deadline = Duration::from_secs(p.timeout);
    let mut report = StopResult {
        record: record_path.display().to_string(),
        ..StopResult::default()
    };
    let mut warnings = Vec::new();
    let changed = match p.state {
        Wanted::Stopped => {
            if names.is_empty() {
                return Err(StopError::Empty);
            }
            let how = StopOptions {
                dependents: p.dependents,
                missing_ok: p.missing_ok,
                check: inv.check_mode,
                start,
                deadline,
            };
            let stopped = stop_set(host, &state, &record_path, &names, &how)?;
            report.order = stopped.order;
            report.already_inactive = stopped.already_inactive;
            let active = stopped.stopped;
            report.stopped = active;
            !report.stopped.is_empty()
        }
        Wanted::Restored | Wanted::Started => {
            let wanted = if p.state == Wanted::Restored {
                match load_record(&record_path)? {
                    Some(r) => r.active_before,
                    None => Vec::new(),
                }
            } else {
                names
            };
            let set = host.systemd.show(&wanted)?;
            if p.state == Wanted::Restored {
                // A unit removed since the stop cannot come back; that is worth a word, not a failure.
                for gone in set.iter().filter(|s| !s.exists()) {
                    warnings.push(format!(
                        "{} ran before the stop but no longer exists, so it was not restored",
                        gone.name
                    ));
                }
            } else {
                check_missing(&set, p.missing_ok)?;
            }
            let set: Vec<UnitStatus> = set.into_iter().filter(UnitStatus::exists).collect();
            let started = start_set(
                host,
                &set,
                inv.check_mode,
                StartLimit::Reset,
                start,
                deadline,
            )?;
            if !inv.check_mode && p.state == Wanted::Restored {
                remove_file(&record_path)?;
            }
            report.order = started.order;
            report.already_active = started.already_active;
            report.started = started.started;
            !report.started.is_empty()
        }
    };
    report.duration_ms = t0.elapsed().as_millis() as u64;
    let verb = if inv.check_mode { "would " } else { "" };
    let msg = match (p.state, changed) {
        (_, false) => "nothing to do: every unit is already as wanted".to_string(),
        (Wanted::Stopped, true) => format!("{verb}stop {}", report.stopped.join(", ")),
        (_, true) => format!("{verb}start {}", report.started.join(", ")),
    };
    let mut out = Outcome::new(changed, msg).with_data(&report);
    out.warnings = warnings;
    Ok(out)
}

/// The path of the stop record `name`, which must be a plain name.
pub fn record_path(state: &StateDir, name: &str) -> Result<std::path::PathBuf, StopError> {
    if !is_plain_name(name) {
        return Err(StopError::BadRecord(name.to_string()));
    }
    Ok(state.stop_record(name))
}

/// What a stop did: the whole set in stop order, what was stopped and what was not running.
#[derive(Debug, Default)]
pub struct Stopped {
    pub order: Vec<String>,
    pub stopped: Vec<String>,
    pub already_inactive: Vec<String>,
}

/// How a stop goes.
#[derive(Debug, Clone, Copy)]
pub struct StopOptions {
    /// Also stop, first, every unit that depends on the named ones.
    pub dependents: bool,
    /// Skip a unit that does not exist instead of refusing the set.
    pub missing_ok: bool,
    /// Check mode: say what would stop, and stop nothing.
    pub check: bool,
    /// When the stop began, and how long the whole set may take from then.
    pub start: Instant,
    pub deadline: Duration,
}

/// Stops `names` (with their target members, and dependents if asked) in reverse dependency
/// order, after merging the active ones into the stop record at `record_path`. In check mode it
/// only says what it would stop.
pub fn stop_set(
    host: &Host,
    state: &StateDir,
    record_path: &std::path::Path,
    names: &[String],
    how: &StopOptions,
) -> Result<Stopped, StopError> {
    let (check, start, deadline) = (how.check, how.start, how.deadline);
    let set = expand(host.systemd, names, how)?;
    let order = stop_order(&set);
    let (active, already_inactive) = split_by_activity(&order, &set);
    if !check && !active.is_empty() {
        let mut rec = load_record(record_path)?.unwrap_or_default();
        for a in &active {
            if !rec.active_before.contains(a) {
                rec.active_before.push(a.clone());
            }
        }
        rec.recorded_at = crate::time::now_rfc3339();
        state.ensure_parent(record_path)?;
        save_record(record_path, &rec)?;
        // While they still serve: the start that brings them back then needs no reset.
        host.systemd.reset_failed(&active)?;
        one_by_one(host, &active, Job::Stop, start, deadline)?;
    }
    Ok(Stopped {
        order,
        stopped: active,
        already_inactive,
    })
}

/// What a start of a set did, or in check mode would do.
pub struct Started {
    pub order: Vec<String>,
    pub already_active: Vec<String>,
    pub started: Vec<String>,
}

/// Every start counts against a unit's start limit (5 in 10 s by default), a stop and start
/// again by each of several migrations too; reset-failed clears the count. Stops never count,
/// so a reset just before a stop protects the start after it as well as one just before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartLimit {
    /// The start resets the units it starts first, in one call.
    Reset,
    /// Their stop reset them (`stop_set`), and nothing started them since: the start goes
    /// without a call in their clients' downtime.
    ResetAtTheStop,
}

/// Starts the units of `set` that are not active, in dependency order (sockets before their
/// services), each one waited for within the run's deadline before the next.
pub fn start_set(
    host: &Host,
    set: &[UnitStatus],
    check: bool,
    limit: StartLimit,
    start: Instant,
    deadline: Duration,
) -> Result<Started, StopError> {
    let order = start_order(set);
    let (already_active, to_start) = split_by_activity(&order, set);
    if !check {
        if limit == StartLimit::Reset {
            host.systemd.reset_failed(&to_start)?;
        }
        one_by_one(host, &to_start, Job::Start, start, deadline)?;
    }
    Ok(Started {
        order,
        already_active,
        started: to_start,
    })
}

/// Stops, in reverse dependency order, whatever of a stop record's units runs again, and leaves
/// the record as it is: what a restore of data needs first, so that nothing writes under it,
/// when a flow started its migrated services before it failed. Returns what it stopped.
pub fn stop_recorded(
    host: &Host,
    record_path: &std::path::Path,
    start: Instant,
    deadline: Duration,
) -> Result<Vec<String>, StopError> {
    let Some(rec) = load_record(record_path)? else {
        return Ok(Vec::new());
    };
    let set: Vec<UnitStatus> = host
        .systemd
        .show(&rec.active_before)?
        .into_iter()
        .filter(UnitStatus::exists)
        .collect();
    let (active, _) = split_by_activity(&stop_order(&set), &set);
    one_by_one(host, &active, Job::Stop, start, deadline)?;
    Ok(active)
}

fn unit_name(raw: &str) -> Result<String, NameError> {
    validate_systemd_unit(raw)?;
    Ok(crate::unit::name::service_name(raw))
}

fn check_missing(set: &[UnitStatus], missing_ok: bool) -> Result<(), StopError> {
    match set.iter().find(|s| !s.exists()) {
        Some(m) if !missing_ok => Err(StopError::Missing(m.name.clone())),
        _ => Ok(()),
    }
}

/// The asked units, the members of asked targets, and (with `dependents`) everything that
/// would go down with them, transitively. One `systemctl show` per layer.
fn expand(
    systemd: &dyn Systemd,
    names: &[String],
    how: &StopOptions,
) -> Result<Vec<UnitStatus>, StopError> {
    let (dependents, missing_ok) = (how.dependents, how.missing_ok);
    let first = systemd.show(names)?;
    check_missing(&first, missing_ok)?;
    let mut set: Vec<UnitStatus> = first.into_iter().filter(UnitStatus::exists).collect();
    let mut known: BTreeSet<String> = set.iter().map(|s| s.name.clone()).collect();
    let mut frontier: Vec<UnitStatus> = set.clone();
    let mut refused: BTreeSet<String> = BTreeSet::new();
    while !frontier.is_empty() {
        let mut next = BTreeSet::new();
        for s in &frontier {
            // A target's members, and a service's sockets, always go with it.
            let mut members = s.list("ConsistsOf");
            members.extend(s.list("TriggeredBy"));
            for d in order::dependents(s) {
                if known.contains(&d) {
                    continue;
                }
                if dependents || members.contains(&d) {
                    next.insert(d);
                } else {
                    refused.insert(d);
                }
            }
        }
        let next: Vec<String> = next
            .into_iter()
            .filter(|n| known.insert(n.clone()))
            .collect();
        frontier = systemd
            .show(&next)?
            .into_iter()
            .filter(UnitStatus::exists)
            .collect();
        set.extend(frontier.iter().cloned());
    }
    if !refused.is_empty() {
        let statuses = systemd.show(&refused.into_iter().collect::<Vec<_>>())?;
        let active: Vec<String> = statuses
            .iter()
            .filter(|s| s.is_active())
            .map(|s| s.name.clone())
            .collect();
        if !active.is_empty() {
            return Err(StopError::ActiveDependents {
                units: names.join(", "),
                dependents: active.join(", "),
            });
        }
    }
    Ok(set)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Goal {
    Active,
    Inactive,
}

/// Splits `order` into the units `set` reports active and the rest, keeping the order.
fn split_by_activity(order: &[String], set: &[UnitStatus]) -> (Vec<String>, Vec<String>) {
    order
        .iter()
        .cloned()
        .partition(|n| set.iter().any(|s| &s.name == n && s.is_active()))
}

/// Runs `job` on each unit in turn, each waited for, within the run's deadline, before the next;
/// a service and its socket side by side in the order are one job (`steps`).
fn one_by_one(
    host: &Host,
    units: &[String],
    job: Job,
    start: Instant,
    deadline: Duration,
) -> Result<(), StopError> {
    let goal = if job == Job::Stop {
        Goal::Inactive
    } else {
        Goal::Active
    };
    for step in steps(units) {
        if job == Job::Stop {
            // systemctl returns as the stop job ends: what a migration waits on, and its
            // service's clients with it, without the lag of a look that comes up to a pause
            // after the stop ended. It is waited for within what is left of the run's
            // deadline; the look that follows confirms the stop, or fails at the deadline.
            let left = deadline.saturating_sub(host.clock.now().duration_since(start));
            host.systemd.run_job_within(job, step, left)?;
        } else {
            host.systemd.enqueue(job, step)?;
        }
        wait_all(host, step, goal, start, deadline)?;
    }
    Ok(())
}

/// The order cut into jobs: `NAME.service` and `NAME.socket` next to each other go together,
/// since systemd orders a socket before its service itself; every other unit alone. A
/// socket-activated service is then down for one systemctl call and one look less, on its stop
/// for a migration and on its start again.
fn steps(units: &[String]) -> Vec<&[String]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let pair = units
            .get(i + 1)
            .is_some_and(|next| socket_pair(&units[i], next));
        let len = if pair { 2 } else { 1 };
        out.push(&units[i..i + len]);
        i += len;
    }
    out
}

fn socket_pair(a: &str, b: &str) -> bool {
    let same = |service: &str, socket: &str| {
        matches!(
            (service.strip_suffix(".service"), socket.strip_suffix(".socket")),
            (Some(x), Some(y)) if x == y
        )
    };
    same(a, b) || same(b, a)
}

/// Polls until every unit reaches the goal, bounded by the run's deadline.
fn wait_all(
    host: &Host,
    units: &[String],
    goal: Goal,
    start: Instant,
    deadline: Duration,
) -> Result<(), StopError> {
    // What a migration waits on: its service's clients see each lag until the next look.
    let mut pauses = crate::poll::Backoff::up_to(Duration::from_millis(100));
    loop {
        let statuses = host.systemd.show(units)?;
        let mut waiting = Vec::new();
        for s in &statuses {
            match goal {
                Goal::Inactive if !s.is_inactive() => waiting.push(s.name.clone()),
                // A start job that ended with the unit down cannot end well by waiting.
                Goal::Active if s.start_ended_down() => {
                    return Err(StopError::StartFailed {
                        unit: s.name.clone(),
                        why: crate::systemd::why_down(host.systemd, s),
                        journal: host.systemd.journal_tail(&s.name, 20),
                    });
                }
                Goal::Active if s.active_state() != "active" => waiting.push(s.name.clone()),
                _ => {}
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if host.clock.now().duration_since(start) >= deadline {
            return Err(StopError::Timeout {
                wanted: if goal == Goal::Active {
                    "active"
                } else {
                    "stopped"
                },
                secs: deadline.as_secs(),
                first: waiting[0].clone(),
                units: waiting.join(", "),
            });
        }
        host.clock.sleep(pauses.pause());
    }
}

fn load_record(path: &std::path::Path) -> Result<Option<StopRecord>, StateError> {
    read_json(path)
}

fn save_record(path: &std::path::Path, rec: &StopRecord) -> Result<(), StateError> {
    write_json(path, rec, 0o600)
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, StopError> {
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    let host = Host {
        systemd: &systemd,
        clock: &crate::time::SystemClock,
    };
    run(p, inv, &host)
}

#[cfg(test)]
mod tests;
