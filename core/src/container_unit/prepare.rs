//! Every target observed, its image fetched and its change planned, before anything changes.
//! The targets are prepared at once: each is a few round trips of its own (its unit file and
//! history, the image's inspection, perhaps a pull), and one after the other they were most of
//! a no-op run's time.

use super::checkpoint::{self, Checkpoint};
use super::observe::{self, Prefetched};
use super::work::Work;
use super::{Host, PullPolicy, Report, Target, UnitError, fetch, resolve, secrets};
use crate::state::StateDir;
use std::time::Instant;

/// How many targets are prepared at once: enough for a deployment's services, without a
/// hundred connections to podman for a hundred units.
const AT_ONCE: usize = 8;

/// What the run does with the targets.
pub struct Prepared {
    /// Each target as it was found, for the run's checkpoint.
    pub before: Checkpoint,
    pub work: Vec<Work>,
    /// Units a whole-deployment rollback leaves as they are: nothing to go back to.
    pub untouched: Vec<String>,
}

pub struct How<'a> {
    pub pre: &'a Prefetched,
    pub restore_from: Option<&'a Checkpoint>,
    /// The targets are a deployment's `units`, not one unit named on its own.
    pub batch: bool,
    pub pull: PullPolicy,
    pub check: bool,
    /// New texts go to the stage: a target's file change waits for its install.
    pub stage: bool,
    /// The images a staged run held off their tags, by unit file: this call installs them.
    pub held: &'a std::collections::BTreeMap<String, crate::state::Held>,
}

enum One {
    Work(Box<Work>),
    Untouched(String),
}

/// One target prepared: its unit file and how it was found, and what the run does with it.
struct Found {
    file: String,
    entry: checkpoint::Entry,
    one: One,
}

/// Prepares every target; the first failure, in the targets' order, fails the whole.
pub fn prepare_all(
    host: &Host,
    state: &StateDir,
    targets: Vec<Target>,
    how: &How,
) -> Result<Prepared, UnitError> {
    let mut out = Prepared {
        before: Checkpoint::default(),
        work: Vec::with_capacity(targets.len()),
        untouched: Vec::new(),
    };
    for prepared in crate::parallel::map(targets, AT_ONCE, |t| prepare(host, state, t, how)) {
        let Found { file, entry, one } = prepared?;
        // The first of a unit named twice is the one found before the run.
        out.before.units.entry(file).or_insert(entry);
        match one {
            One::Work(w) => out.work.push(*w),
            One::Untouched(unit) => out.untouched.push(unit),
        }
    }
    Ok(out)
}

fn prepare(host: &Host, state: &StateDir, mut t: Target, how: &How) -> Result<Found, UnitError> {
    let lap = Instant::now();
    let mut obs = observe::observe(host, state, &t, how.pre)?;
    let (file, entry) = (t.name.file_name(), checkpoint::Entry::of(&obs));
    let resolved = match how.restore_from {
        Some(cp) => resolve::resolve_checkpoint(&mut t, &mut obs, cp),
        None => resolve::resolve_rollback(&mut t, &mut obs),
    };
    match resolved {
        Ok(()) => {}
        // Rolling a whole deployment back leaves the units it never changed as they are; a
        // unit named on its own must have something to go back to.
        Err(UnitError::NoPrevious(unit)) if how.batch => {
            return Ok(Found {
                file,
                entry,
                one: One::Untouched(unit),
            });
        }
        Err(e) => return Err(e),
    }
    let observed_ms = lap.elapsed().as_millis() as u64;
    let lap = Instant::now();
    secrets::ensure(host, state, &t, how.check)?;
    let tagged = obs.image_id.clone();
    // The unit is to run the image its run held off the tag, which the tag names once the
    // unit is installed, just before its restart (apply).
    if let Some(held) = how.held.get(&t.name.file_name())
        && host.podman.image_id(&held.id)?.is_some()
    {
        obs.image_id = Some(held.id.clone());
        obs.held = Some(held.clone());
    }
    let fetched = fetch::fetch(host, &t, &mut obs, how.pull, how.check)?;
    if how.stage && !how.check {
        obs.held = fetch::hold(host, &t, &obs, tagged)?;
    }
    super::adopt::take_over(&t, &mut obs);
    let mut plan = resolve::plan_target(&t, &obs);
    let staged = how.stage && plan.defer_file();
    let mut report = Report::new(&t, &obs, &plan, fetched);
    if staged {
        report.staged(&t, &plan);
    }
    report.result.duration_ms.observe = Some(observed_ms);
    report.result.duration_ms.fetch = Some(lap.elapsed().as_millis() as u64);
    Ok(Found {
        file,
        entry,
        one: One::Work(Box::new(Work {
            target: t,
            observed: obs,
            plan,
            report,
        })),
    })
}
