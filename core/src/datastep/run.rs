//! The steps, in order: judge each (nothing to do, or refused), then stop, build and install.

use super::place::{self, Method, OldCluster, Place, Transfer};
use super::{DataStepError, Params, Report, Step, StepReport};
use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::podman::{Finished, OneOff};
use crate::state::StateDir;
use crate::unit::UnitName;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The work inside the one-off containers.
const SCRIPT: &str = include_str!("postgresql.sh");
/// How many lines of a failed container's output its error quotes.
const TAIL_LINES: usize = 30;
/// A probe reads a few files: a minute is more than a loaded host needs.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

pub fn run(p: &Params, inv: &Invocation, host: &Host) -> Result<Outcome, DataStepError> {
    let state = StateDir::new(&p.state_dir);
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run("data_step", p.run_id.as_deref(), host.clock)?)
    };
    let mut steps = Vec::with_capacity(p.steps.len());
    for s in &p.steps {
        steps.push(one(s, p, inv, host, &state)?);
    }
    let changed = steps
        .iter()
        .any(|r| r.built || r.installed || !r.stopped.is_empty())
        || (inv.check_mode && steps.iter().any(|r| r.new.is_some()));
    let msg = steps
        .iter()
        .map(|r| match (r.old_major, r.new_major) {
            (Some(o), Some(n)) if r.already => {
                format!(
                    "{}: {o} to {n} was built by an earlier run; installed",
                    r.unit
                )
            }
            (Some(o), Some(n)) => format!("{}: moved {o} to {n}", r.unit),
            _ if inv.check_mode && r.new.is_some() => format!("{}: would move its data", r.unit),
            _ => format!("{}: nothing to do", r.unit),
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Outcome::new(changed, msg).with_data(Report { steps }))
}

/// The two places of one step, or None when its unit is not moving to another volume.
struct Move {
    old: Place,
    new: Place,
}

fn places(s: &Step, p: &Params, state: &StateDir) -> Result<Option<Move>, DataStepError> {
    let file = UnitName::parse(&s.unit)?.file_name();
    let path = p.quadlet_dir.join(&file);
    // Not installed yet (a first deploy): there is no old data to move.
    let Some(installed) = crate::state::read_optional(&path)? else {
        return Ok(None);
    };
    let staged = match &p.stage {
        Some(name) => state.load_stage(name)?.units.remove(&file).map(|s| s.text),
        None => None,
    };
    let Some(staged) = staged else {
        return Ok(None);
    };
    let old = place::of_text(&installed, &s.data_dir, &format!("installed {file}"))?;
    let new = place::of_text(&staged, &s.data_dir, &format!("staged {file}"))?;
    Ok((old.image != new.image || old.volume != new.volume).then_some(Move { old, new }))
}

fn one(
    s: &Step,
    p: &Params,
    inv: &Invocation,
    host: &Host,
    state: &StateDir,
) -> Result<StepReport, DataStepError> {
    let t0 = Instant::now();
    let name = UnitName::parse(&s.unit)?;
    let mut report = StepReport {
        unit: name.service(),
        ..StepReport::default()
    };
    let Some(Move { old, new }) = places(s, p, state)? else {
        return Ok(report);
    };
    let unit = report.unit.clone();
    // Preflight: every refusal comes before anything stops.
    if host.podman.image_id(&old.image)?.is_none() {
        return Err(DataStepError::OldImageGone {
            unit,
            image: old.image,
        });
    }
    if host.podman.image_id(&new.image)?.is_none() {
        return Err(DataStepError::NewImageMissing {
            unit,
            image: new.image,
        });
    }
    report.old = Some(old.clone());
    report.new = Some(new.clone());
    // The probes below run containers: check mode says what would move, from the texts alone.
    if inv.check_mode {
        return Ok(report);
    }
    let label = format!("data-step:{unit}");
    let old_ro = format!("{}:/old:ro", old.volume);
    let probe = contained(
        host,
        &label,
        &old.image,
        vec![old_ro.clone()],
        &["probe"],
        PROBE_TIMEOUT,
    )
    .map_err(|d| probe_error(&unit, "reading the old cluster", d))?;
    let cluster = OldCluster::from_output(&probe)
        .ok_or_else(|| probe_error(&unit, "reading the old cluster", probe.clone()))?;
    let major = contained(host, &label, &new.image, vec![], &["major"], PROBE_TIMEOUT)
        .map_err(|d| probe_error(&unit, "asking the new image its major", d))?;
    let new_major: u32 = place::said(&major, "major")
        .and_then(|m| m.parse().ok())
        .ok_or_else(|| probe_error(&unit, "asking the new image its major", major.clone()))?;
    judge(s, &unit, &old, &new, &cluster, new_major)?;
    report.old_major = Some(cluster.major);
    report.new_major = Some(new_major);
    report.size_kb = Some(cluster.size_kb);
    // From here to the install, the database and everything that writes to it are down: no
    // write is acknowledged that the new cluster would not hold.
    let record = crate::stop_services::record_path(state, &p.stop_record)?;
    let how = crate::stop_services::StopOptions {
        dependents: true,
        missing_ok: false,
        check: false,
        start: host.clock.now(),
        deadline: Duration::from_secs(p.timeout),
    };
    let stop_host = crate::stop_services::Host {
        systemd: host.systemd,
        clock: host.clock,
    };
    report.stopped = crate::stop_services::stop_set(
        &stop_host,
        state,
        &record,
        std::slice::from_ref(&unit),
        &how,
    )?
    .stopped;
    let timeout = Duration::from_secs(p.timeout);
    let both = vec![old_ro, format!("{}:/new", new.volume)];
    let method = method_word(s.method);
    let mut prepare = vec!["prepare", method];
    prepare.extend(s.tables.iter().map(String::as_str));
    let prepared = contained(host, &label, &old.image, both.clone(), &prepare, timeout)
        .map_err(|d| probe_error(&unit, "copying the old cluster", d))?;
    report.already = place::said(&prepared, "already") == Some("1");
    if !report.already {
        let mut build = vec!["build", method, transfer_word(s.transfer), &s.analyze];
        build.extend(s.tables.iter().map(String::as_str));
        build.push("--");
        build.extend(s.checks.iter().map(String::as_str));
        contained(host, &label, &new.image, both, &build, timeout)
            .map_err(|d| probe_error(&unit, "building the new cluster", d))?;
        report.built = true;
    }
    if let Some(stage) = &p.stage {
        let file = name.file_name();
        // Recorded before the install: whatever happens after, the old place is on record
        // for the verify's prune, which never removes the one the unit mounts.
        super::keep::note(state, &file, &old)?;
        if state.install_staged(stage, &p.quadlet_dir, &file)? == crate::state::Installed::Written {
            host.systemd.daemon_reload()?;
            report.installed = true;
        }
    }
    report.duration_ms = t0.elapsed().as_millis() as u64;
    Ok(report)
}

/// The refusals the old cluster and the new image decide.
fn judge(
    s: &Step,
    unit: &str,
    old: &Place,
    new: &Place,
    cluster: &OldCluster,
    new_major: u32,
) -> Result<(), DataStepError> {
    let unit = unit.to_string();
    if new_major < cluster.major {
        return Err(DataStepError::Downgrade {
            unit,
            old: cluster.major,
            new: new_major,
        });
    }
    if new_major == cluster.major {
        return Err(DataStepError::SameMajor {
            unit,
            old_volume: old.volume.clone(),
            new_volume: new.volume.clone(),
            major: new_major,
        });
    }
    if old.volume == new.volume {
        return Err(DataStepError::SameVolume {
            unit,
            volume: old.volume.clone(),
            old: cluster.major,
            new: new_major,
        });
    }
    let needed = place::needed_kb(s.method, s.transfer, cluster.size_kb);
    if cluster.avail_kb < needed {
        let hint = match (s.method, s.transfer) {
            (Method::PgUpgrade, Transfer::Copy) => ", or use transfer: link (no second copy)",
            (Method::Dump, _) => ", or use method: pg_upgrade with transfer: link",
            _ => "",
        };
        return Err(DataStepError::Disk {
            unit,
            method: format!("{} {}", method_word(s.method), transfer_word(s.transfer)),
            needed_mb: needed.div_ceil(1024),
            size_mb: cluster.size_kb.div_ceil(1024),
            avail_mb: cluster.avail_kb / 1024,
            hint,
        });
    }
    Ok(())
}

fn method_word(m: Method) -> &'static str {
    match m {
        Method::PgUpgrade => "pg_upgrade",
        Method::Dump => "dump",
    }
}

fn transfer_word(t: Transfer) -> &'static str {
    match t {
        Transfer::Link => "link",
        Transfer::Copy => "copy",
        Transfer::Clone => "clone",
    }
}

fn probe_error(unit: &str, what: &'static str, detail: String) -> DataStepError {
    DataStepError::Probe {
        unit: unit.to_string(),
        what,
        detail,
    }
}

/// Runs one phase of the script in a one-off container with no network; its output, or the
/// tail of it (with the exit) when it failed.
fn contained(
    host: &Host,
    label: &str,
    image: &str,
    volumes: Vec<String>,
    args: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    let mut command = vec![
        "sh".to_string(),
        "-c".to_string(),
        SCRIPT.to_string(),
        "refit-data-step".to_string(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    let spec = OneOff {
        image: image.to_string(),
        command,
        env: Vec::new(),
        volumes,
        network: Some("none".to_string()),
        labels: HashMap::from([(
            crate::podman::oneoff::SOURCE_LABEL.to_string(),
            label.to_string(),
        )]),
    };
    match host.podman.run_oneoff(&spec, timeout) {
        Ok(Finished::Exited(r)) if r.rc == 0 => Ok(r.output),
        Ok(Finished::Exited(r)) => Err(format!("exited {}:\n{}", r.rc, tail(&r.output))),
        Ok(Finished::TimedOut { output }) => Err(format!(
            "timed out after {} s and was killed:\n{}",
            timeout.as_secs(),
            tail(&output)
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}
