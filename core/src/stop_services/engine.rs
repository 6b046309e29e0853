//! The stop/start engine: stops a set of units in reverse dependency order, with what goes down
//! with them, after recording what ran, and starts them again in order, each step waited for
//! within the run's deadline. `stop_services` is its module face; migrate and data steps use
//! it directly.

use super::order::{start_order, stop_order};
use super::{Host, StopError, load_record, save_record};
use crate::state::StateDir;
use crate::systemd::{Job, UnitStatus};
use std::time::{Duration, Instant};

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
    /// Also stop, first, every unit that depends on the named ones: what would go down with
    /// them, and what wants them, which would start them again (`order::wanting`).
    pub dependents: bool,
    /// Skip a unit that does not exist instead of refusing the set.
    pub missing_ok: bool,
    /// Check mode: say what would stop, and stop nothing.
    pub check: bool,
    /// When the stop began, and how long the whole set may take from then.
    pub start: Instant,
    pub deadline: Duration,
}

/// Stops `names` (with their target members, and dependents if asked: `expand`) in reverse dependency
/// order, after merging the active ones into the stop record at `record_path`. In check mode it
/// only says what it would stop.
pub fn stop_set(
    host: &Host,
    state: &StateDir,
    record_path: &std::path::Path,
    names: &[String],
    how: &StopOptions,
) -> Result<Stopped, StopError> {
    let planned = record_stop(host, state, record_path, names, how)?;
    stop_recorded_set(host, &planned, how)?;
    Ok(planned)
}

/// The first half of `stop_set`: what it would stop, merged into the stop record (outside
/// check mode) before anything stops. Callers that stop several sets at once take this half one
/// at a time, since it reads, changes and writes the one record, and then stop at once.
pub fn record_stop(
    host: &Host,
    state: &StateDir,
    record_path: &std::path::Path,
    names: &[String],
    how: &StopOptions,
) -> Result<Stopped, StopError> {
    let set = super::expand::expand(host.systemd, names, how.dependents, how.missing_ok)?;
    let order = stop_order(&set);
    let (active, already_inactive) = split_by_activity(&order, &set);
    if !how.check && !active.is_empty() {
        let mut rec = load_record(record_path)?.unwrap_or_default();
        for a in &active {
            if !rec.active_before.contains(a) {
                rec.active_before.push(a.clone());
            }
        }
        rec.recorded_at = crate::time::now_rfc3339();
        state.ensure_parent(record_path)?;
        save_record(record_path, &rec)?;
    }
    Ok(Stopped {
        order,
        stopped: active,
        already_inactive,
    })
}

/// The second half of `stop_set`: stops what `record_stop` recorded, in its order.
pub fn stop_recorded_set(
    host: &Host,
    planned: &Stopped,
    how: &StopOptions,
) -> Result<(), StopError> {
    if !how.check && !planned.stopped.is_empty() {
        // While they still serve: the start that brings them back then needs no reset.
        host.systemd.reset_failed(&planned.stopped)?;
        one_by_one(host, &planned.stopped, Job::Stop, how.start, how.deadline)?;
    }
    Ok(())
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

/// Stops `units` (of a stop record already written), every stop job handed to systemd at
/// once. systemd still stops a unit ordered after another before that one, and stops side by
/// side the units that are not ordered against each other: a migration that stops the services
/// of one image waits for the slowest of them, not for the sum of their stops.
pub fn stop_at_once(host: &Host, units: &[String], how: &StopOptions) -> Result<(), StopError> {
    if how.check || units.is_empty() {
        return Ok(());
    }
    host.systemd.reset_failed(units)?;
    host.systemd.enqueue(Job::Stop, units)?;
    wait_all(host, units, Goal::Inactive, how.start, how.deadline)
}

/// Starts the units of `set` that are not active, every start job handed to systemd at once
/// (ordered as `stop_at_once` says), after a stop that reset their start limit; waits
/// until all are active within the run's deadline.
pub fn start_set_at_once(
    host: &Host,
    set: &[UnitStatus],
    start: Instant,
    deadline: Duration,
) -> Result<Started, StopError> {
    let order = start_order(set);
    let (already_active, to_start) = split_by_activity(&order, set);
    if !to_start.is_empty() {
        host.systemd.enqueue(Job::Start, &to_start)?;
        wait_all(host, &to_start, Goal::Active, start, deadline)?;
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
pub(super) fn steps(units: &[String]) -> Vec<&[String]> {
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
