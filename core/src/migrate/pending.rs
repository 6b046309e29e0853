//! A pending migration run: its container prepared while its services serve, then stop,
//! migrate, start again.

use super::judge::{Judged, Ready, judge, named_source};
use super::one::{Done, One};
use super::same_image::{self, SameImage, Waves};
use super::stamp::{new_stamp, save_stamp};
use super::{MigrateError, Report, backup, short, staged, start_again, stop_host, tail};
use crate::podman::{Ended, Guard, OneOff, Prepared};
use std::time::Duration;

/// What migrations running at once share, taken one at a time: the run's stop record and its
/// list of backups, both read, changed and written again (each write atomic).
pub(super) type Books = std::sync::Mutex<()>;

/// Where a migration's stop and backup are recorded.
struct At<'a> {
    stop_record: &'a std::path::Path,
    books: &'a Books,
}

/// Runs one migration if it is pending, in the order that keeps its services' downtime to the
/// migration itself and their start (issue 15): the container is created while they still
/// serve, then they stop (and are backed up), the migration runs, they start again, and only
/// then is the container removed. If the create fails, nothing is stopped; whatever fails
/// after it, the container is removed.
pub(super) fn run_one(one: &mut One, books: &Books) -> Result<Done, MigrateError> {
    let (m, p) = (one.m, one.p);
    let checked_pending = p.checked_pending.get(&named_source(m)).map(String::as_str);
    let ready = match judge(one, checked_pending)? {
        Judged::Decided(d) => return Ok(*d),
        Judged::Pending(r) => *r,
    };
    let (host, state) = (one.host, one.state);
    let stop_record = crate::stop_services::record_path(state, &p.stop_record)?;
    let spec = OneOff {
        command: m.command.clone(),
        ..ready.oneoff.spec.clone()
    };
    // The guard removes the container on every early return, and on a panic.
    let container = Guard::new(host.podman, host.podman.prepare_oneoff(&spec)?);
    let at = At {
        stop_record: &stop_record,
        books,
    };
    let done = migrate_prepared(one, &at, ready, container.prepared());
    let removed = container.remove();
    let done = done?;
    removed?;
    Ok(done)
}

/// A pending migration whose container is prepared: stops its services, backs up, runs it,
/// and starts them again, leaving the container for the caller to remove.
fn migrate_prepared(
    one: &One,
    at: &At,
    mut ready: Ready,
    container: &Prepared,
) -> Result<Done, MigrateError> {
    let One {
        m, p, host, state, ..
    } = *one;
    let stop_record = at.stop_record;
    let timeout = Duration::from_secs(p.timeout);
    let same = same_image::units(m, p, state, host)?;
    let (source, stamp) = (ready.oneoff.source.clone(), ready.stamp_path.clone());
    let origin = backup::For {
        source: &source,
        migration: &named_source(m),
        stamp: &stamp,
    };
    let site = backup::Site {
        host,
        state,
        record: &p.stop_record,
        timeout,
    };
    // Made ready while the services serve: once they stopped, only the dump runs.
    let staged_backup = m
        .backup
        .as_ref()
        .map(|b| backup::stage(b, &origin, &site))
        .transpose()?;
    // Set when the other units of the image stop too: the start goes in the same two waves.
    let mut waves = None;
    if p.stop_first {
        // Pending, so the service and what needs it stop before the schema changes under them.
        let how = crate::stop_services::StopOptions {
            dependents: true,
            missing_ok: staged::only_staged(m, p, state)?,
            check: false,
            start: host.clock.now(),
            deadline: timeout,
        };
        // Migrations running at once share the run's stop record: one at a time reads, merges
        // and writes it, before its own stop; the stops themselves then run at once, each
        // recorded before it began (`together` keeps their sets apart).
        let mut names = vec![ready.oneoff.source.clone()];
        names.extend(same.services.iter().cloned());
        let planned = {
            let _books = at
                .books
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            crate::stop_services::record_stop(&stop_host(host), state, stop_record, &names, &how)?
        };
        if same.services.is_empty() {
            crate::stop_services::stop_recorded_set(&stop_host(host), &planned, &how)?;
        } else {
            // The other units of the image first, so the migrated service serves until the
            // migration can begin, and stops last, for its own stop alone.
            let split = same.waves(host, &planned.stopped)?;
            for wave in [&split.same_image, &split.own] {
                crate::stop_services::stop_at_once(&stop_host(host), wave, &how)?;
            }
            waves = Some(split);
        }
        ready.report.stopped = planned.stopped;
    }
    // With its services stopped, nothing writes after the backup that a restore would lose.
    if let Some(staged) = staged_backup {
        let taken = staged.take(&origin, &site, at.books)?;
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
        Ended::Exited { rc } => exited(one, ready, container, rc, &same, waves.as_ref()),
    }
}

/// A migration that ran to its exit: a failure is reported and stamps nothing; a success is
/// stamped, and what it stopped starts again at once (`start_after`), before its output is
/// read: the log is for the report, the exit code was enough to decide.
fn exited(
    one: &One,
    ready: Ready,
    container: &Prepared,
    rc: i64,
    same: &SameImage,
    waves: Option<&Waves>,
) -> Result<Done, MigrateError> {
    let One {
        m, p, host, state, ..
    } = *one;
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
    report.installed = staged::install(m, &same.files, p, host, state)?;
    // Up again at once: no service waits for another's migration, nor for the removal.
    if p.start_after && !report.stopped.is_empty() {
        let timeout = Duration::from_secs(p.timeout);
        let min_healthy = Duration::from_millis(p.min_healthy_time);
        let bounds = start_again::Bounds {
            deadline: timeout,
            min_healthy,
        };
        report.started = start_again::start_again_in_waves(host, &report.stopped, waves, bounds)?;
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
