//! Whether a migration is pending, decided without stopping anything.

use super::one::{Done, One};
use super::params::{Checks, migrations, validate};
use super::stamp::{load_stamp, new_stamp, save_stamp, stamp_key};
use super::{Judgement, MigrateError, Migration, Params, Report, short, source, staged};
use crate::ansible::Invocation;
use crate::host::Host;
use crate::podman::{Finished, OneOff};
use crate::state::StateDir;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A migration found pending, with what running it needs.
pub(super) struct Ready {
    pub(super) oneoff: source::Source,
    pub(super) image_id: String,
    /// The check command said so (now, or earlier in this run for this image).
    pub(super) checked: bool,
    pub(super) stamp_path: PathBuf,
    pub(super) report: Report,
    pub(super) t0: Instant,
}

/// A migration either decided without running it (nothing pending, or check mode), or pending.
pub(super) enum Judged {
    Decided(Box<Done>),
    Pending(Box<Ready>),
}

/// Whether one migration is pending for the image its unit is about to run, decided without
/// stopping anything: its stamp first, then its check command (which stamps `not_pending`).
/// `checked_pending`: the image ID for which this run's first call already ran the check command
/// and found work. The check is not run twice for one image: Pulp's takes seconds.
pub(super) fn judge(one: &mut One, checked_pending: Option<&str>) -> Result<Judged, MigrateError> {
    let One {
        m,
        p,
        inv,
        host,
        state,
        ..
    } = *one;
    let t0 = Instant::now();
    let coming = m
        .unit
        .as_deref()
        .and_then(|u| p.images.get(u.trim_end_matches(".container")));
    let staged = staged::text(m, p, state)?;
    // A new image held off the unit's tag until its install is the one it is about to run.
    let held = staged::held(m, p, state)?.map(|h| h.id);
    // Its unit restarts in this run anyway: the flow staged a new text or held a new image
    // (check mode stages nothing: there, the image it is about to run is another).
    let restarts = staged.is_some()
        || held.is_some()
        || (inv.check_mode && coming.is_some_and(|c| image_on_disk(m, p).as_deref() != Some(c)));
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
    // A unit that restarts anyway is stopped for its migration without asking: with nothing
    // pending, the migration finds nothing to do, in the one application start it costs.
    let unasked = p.checks == Checks::WhenKept && restarts;
    if inv.check_mode {
        let msg = match m.check_command.as_ref().filter(|_| !unasked) {
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
    for env in &oneoff.secrets {
        let value =
            host.podman
                .secret_value(&env.secret)?
                .ok_or_else(|| MigrateError::SecretGone {
                    origin: oneoff.source.clone(),
                    secret: env.secret.clone(),
                })?;
        oneoff.spec.env.push(format!("{}={value}", env.variable));
        one.revealed.push(value);
    }
    let checked = m.check_command.is_some() && !unasked;
    if let Some(check) = m
        .check_command
        .as_ref()
        .filter(|_| checked && checked_pending != Some(image_id.as_str()))
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

/// The image the migration's unit runs as its file on disk says; None without a file.
fn image_on_disk(m: &Migration, p: &Params) -> Option<String> {
    source::oneoff(m, &p.quadlet_dir, None, None)
        .ok()
        .map(|s| s.spec.image)
}

/// A migration as the deployment names it (its unit, or else its image), so a plan can set it
/// beside its unit and a later call find it again.
pub(super) fn named_source(m: &Migration) -> String {
    m.unit
        .clone()
        .or_else(|| m.image.clone())
        .unwrap_or_default()
}

/// Every migration of a call judged, and the values of the units' secrets read to judge them,
/// to be masked like parameters.
pub struct Judgements {
    pub list: Vec<Judgement>,
    pub revealed: Vec<String>,
}

/// Judges every migration without running or stopping anything: what a flow's first call
/// needs to decide whether there is work. A pending one is judged again when it runs.
pub fn judge_all(p: &Params, inv: &Invocation, host: &Host) -> Result<Judgements, MigrateError> {
    validate(p)?;
    let state = StateDir::new(&p.state_dir);
    let list = migrations(p);
    let mut revealed = Vec::new();
    let mut out = Vec::with_capacity(list.len());
    for m in list {
        let source = named_source(m);
        let mut one = One::new(m, p, inv, host, &state);
        let judged = judge(&mut one, None)?;
        revealed.append(&mut one.revealed);
        out.push(match judged {
            Judged::Decided(d) => Judgement {
                source,
                pending: d.changed,
                msg: d.msg,
                image_id: d.report.image_id.clone(),
                checked: false,
            },
            Judged::Pending(r) => Judgement {
                msg: format!(
                    "{}: {} for image {}",
                    r.oneoff.source,
                    if m.check_command.is_some() && !r.checked {
                        "to run without its check (its unit restarts in this run anyway)"
                    } else {
                        "pending"
                    },
                    short(&r.image_id)
                ),
                source,
                pending: true,
                image_id: Some(r.image_id.clone()),
                checked: r.checked,
            },
        });
    }
    Ok(Judgements {
        list: out,
        revealed,
    })
}
