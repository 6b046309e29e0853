//! `flow_state`: what a deploy, update or upgrade run checks before it touches anything, and
//! what it records when it is done.
//!
//! `begin` fails, before anything stops, when: another run's lease is held (a run of the same
//! flow and stream resumes it instead), an upgrade path is not allowed, the image store is short
//! of space, the podman API is unreachable, a service is unhealthy, or an image is missing.
//! `finish` records the stream in use and releases the lease; `end` closes a run that failed
//! (flow/lease.rs). A `begin` that fails after it took the lease, with nothing touched,
//! releases the lease itself.
//!
//! Given the deployment's `units` (and `migrations`), `begin` also fetches every image, writes
//! and plans every unit and judges every migration (flow/plan.rs); when nothing is to do it
//! finishes the flow in the same call, so a no-op run is one module call.

mod checks;
mod derived;
mod lease;
mod plan;
mod quiet;
pub mod spec;
mod stream;
mod target;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::results::flow_state::FlowStateResult as Report;
use crate::state::{StateDir, StateError, atomic_write, read_optional, remove_file};
use crate::systemd::Remembered;
use serde::Deserialize;
use std::path::PathBuf;

pub use crate::state::Lease;
pub use lease::{Judge, Leases, Liveness, Taken};

pub use derived::run_id;
pub use stream::{PathError, check_upgrade};

/// The flow a run is: what the lease, the checkpoint and the stop record are named after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    Deploy,
    Update,
    Upgrade,
}

impl Flow {
    pub fn as_str(self) -> &'static str {
        match self {
            Flow::Deploy => "deploy",
            Flow::Update => "update",
            Flow::Upgrade => "upgrade",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Begin,
    Finish,
    End,
    Abandon,
    Status,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Params {
    pub action: Action,
    pub flow: Option<Flow>,
    pub stream: Option<String>,
    #[serde(default)]
    pub streams: Vec<String>,
    pub allow_skip: bool,
    pub run_id: Option<String>,
    #[serde(default)]
    pub services: Option<Vec<String>>,
    #[serde(default)]
    pub images: Option<Vec<String>>,
    pub image_archive: Option<PathBuf>,
    pub offline: bool,
    pub min_free_mb: u64,
    pub lease_grace: u64,
    #[serde(default)]
    pub ended_runs: Vec<String>,
    #[serde(default)]
    pub recovered: bool,
    pub image_store: PathBuf,
    pub state_dir: PathBuf,
    pub podman_socket: String,
    #[serde(default)]
    pub units: Vec<serde_json::Value>,
    #[serde(default)]
    pub migrations: Vec<serde_json::Value>,
    #[serde(default)]
    pub pull: Option<String>,
    /// Registry logins for `begin`'s pulls and digest lookups; None for podman's own lookup.
    #[serde(default)]
    pub auth_file: Option<PathBuf>,
    pub timeout: u64,
    pub max_parallel: u64,
    #[serde(default = "crate::container_unit::one")]
    pub max_parallel_units: u64,
    pub min_healthy_time: u64,
    /// When the migrations' check commands run, as `run_migrations` `checks`.
    #[serde(default)]
    pub migration_checks: crate::migrate::Checks,
    pub keep_revisions: u64,
    pub quadlet_dir: PathBuf,
    pub systemd_dir: PathBuf,
    #[serde(default)]
    pub target: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error("preflight: {0}")]
    Path(#[from] PathError),
    #[error(
        "preflight: an unfinished {flow} to stream {stream} (run {run_id}, started {started_at}) holds {path}; run that {flow} again to resume it, or release it with flow_state action=abandon"
    )]
    Leased {
        flow: String,
        stream: String,
        run_id: String,
        started_at: String,
        path: PathBuf,
    },
    #[error(
        "preflight: run {run_id} (started {started_at}) is live: its last module call on this host was {quiet_secs} s ago; wait for it to finish. If its controller is gone (killed, powered off), run again {grace_secs} s after that call, and the new run resumes it"
    )]
    Live {
        run_id: String,
        started_at: String,
        quiet_secs: u64,
        grace_secs: u64,
    },
    #[error(
        "preflight: a refit module is at work on this host now ({holder}); wait for its run to finish, then run again"
    )]
    Busy { holder: String },
    #[error(
        "the run lease belongs to run {holder}, not to this run {run_id}; this run did not own the host, so it records nothing. Check `flow_state action=status`, and let run {holder} finish"
    )]
    NotOwner { holder: String, run_id: String },
    #[error(
        "preflight: the image store {path} has {free} MiB free, less than the {need} MiB needed; free some space (podman image prune) or lower min_free_mb"
    )]
    Disk { path: PathBuf, free: u64, need: u64 },
    #[error("preflight: cannot read free space of {path}: {source}")]
    Statvfs {
        path: PathBuf,
        #[source]
        source: rustix::io::Errno,
    },
    #[error("preflight: {0}")]
    Podman(#[from] crate::podman::PodmanError),
    #[error("preflight: {0}")]
    Systemd(#[from] crate::systemd::SystemdError),
    #[error(
        "preflight: these services are not healthy, so nothing was touched: {0}; fix them first"
    )]
    Unhealthy(String),
    #[error(
        "preflight: these images are not present locally, so nothing was touched: {0}; load them (image_archive) or pull them first"
    )]
    MissingImages(String),
    #[error(
        "preflight: this is the first run here, so there is no stream to upgrade from; deploy stream {0} first"
    )]
    NothingToUpgrade(String),
    #[error(
        "preflight: this host runs stream {recorded}, and a{flow} stays on its stream; to move to {stream}, run an upgrade"
    )]
    StreamChange {
        flow: String,
        recorded: String,
        stream: String,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Param(#[from] crate::ansible::validate::ParamError),
    #[error("parameters could not be read: {0}")]
    Params(String),
    #[error(transparent)]
    Unit(#[from] crate::container_unit::UnitError),
    #[error(transparent)]
    Migrate(#[from] crate::migrate::MigrateError),
    #[error("preflight: {0}")]
    BootTime(#[from] crate::time::BootTimeError),
}

/// What every action reads first: the state dir's stream and lease.
struct Context<'a> {
    p: &'a Params,
    state: StateDir,
    leases: Leases,
    stream_path: PathBuf,
    recorded: Option<String>,
    lease: Option<Lease>,
    /// The flow, when the action names one (begin and finish must).
    kind: Option<Flow>,
    flow: String,
    stream: String,
    run_id: String,
}

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, FlowError> {
    let state = StateDir::new(&p.state_dir);
    let leases = Leases::new(&state);
    let stream_path = state.stream_file();
    let recorded = read_optional(&stream_path)?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let lease: Option<Lease> = leases.read()?;
    let run_id = match (&p.run_id, p.action, p.flow) {
        (None, Action::Begin, Some(flow)) => Some(derived::run_id(flow)),
        (given, _, _) => given.clone(),
    };
    let report = Report {
        recorded_stream: recorded.clone(),
        stream: p.stream.clone(),
        run_id: run_id.clone(),
        lease: leases.path().display().to_string(),
        ..Report::default()
    };
    let cx = Context {
        p: &p,
        kind: p.flow,
        flow: p.flow.map(Flow::as_str).unwrap_or_default().to_string(),
        stream: p.stream.clone().unwrap_or_default(),
        run_id: run_id.unwrap_or_default(),
        state,
        leases,
        stream_path,
        recorded,
        lease,
    };
    let out = match p.action {
        Action::Status => Outcome::new(
            false,
            format!(
                "stream {}",
                cx.recorded.as_deref().unwrap_or("none recorded")
            ),
        ),
        Action::Abandon => lease::abandon(&cx, inv)?,
        Action::End => cx.leases.end(&cx.run_id, p.recovered, inv)?,
        Action::Begin => return begin(&cx, inv, host, report),
        // Recording the stream a run reached is bookkeeping, not a change to the services, so
        // a no-op run stays `changed=0`.
        Action::Finish => {
            finish(&cx, inv)?;
            Outcome::new(
                false,
                format!("{} finished on stream {}", cx.flow, cx.stream),
            )
        }
    };
    Ok(out.with_data(&report))
}

/// Every check before anything is touched, then the lease; with `units`, the plan too, and
/// when nothing is to do, the finish.
fn begin(
    cx: &Context,
    inv: &Invocation,
    host: &Host,
    mut report: Report,
) -> Result<Outcome, FlowError> {
    let p = cx.p;
    let (flow, stream, run_id) = (&cx.flow, &cx.stream, &cx.run_id);
    let reads = plan::validate_all(p, flow, &inv.scope)?;
    // The health check's look at systemd and at the containers also reads every unit the plan
    // will, so the plan needs no look of its own unless something changed in between.
    let remembered = Remembered::new(host.systemd, reads.services).with_containers(host.podman);
    let host = &Host {
        systemd: &remembered,
        ..*host
    };
    if let Some(t) = &p.target {
        target::validate(t)?;
    }
    // Read-only first: a refusal for any reason writes nothing.
    let claim = lease::Claim {
        flow,
        stream,
        run_id,
    };
    let decided = cx.leases.decide(
        cx.lease.as_ref(),
        &claim,
        &lease::judge(p, &host.clock.boot_time()?),
    )?;
    if cx.kind != Some(Flow::Upgrade)
        && let Some(r) = &cx.recorded
        && r != stream
    {
        return Err(FlowError::StreamChange {
            flow: if cx.kind == Some(Flow::Update) {
                "n update".into()
            } else {
                " deploy".into()
            },
            recorded: r.clone(),
            stream: stream.clone(),
        });
    }
    if cx.kind == Some(Flow::Upgrade) {
        let from = cx
            .lease
            .as_ref()
            .and_then(|l| l.from_stream.clone())
            .or_else(|| cx.recorded.clone())
            .ok_or_else(|| FlowError::NothingToUpgrade(stream.clone()))?;
        check_upgrade(&from, stream, &p.streams, p.allow_skip)?;
    }
    report.free_mb = Some(checks::check_disk(&p.image_store, p.min_free_mb)?);
    // A host as the last call with nothing to do left it answers from that call's record.
    let quiet = quiet::Quiet::look(p, &cx.state, &inv.scope, host);
    if !quiet.adopted {
        host.podman.ping()?;
    }
    // A failed service refuses a new run, which would change a host in trouble; an interrupted
    // run's resume goes on, since the failure may be that run's own (killed in its recovery,
    // say), and converging is what mends it.
    let resuming = matches!(decided, Taken::Resumed { .. });
    // Podman answers for the images the plan inspects while systemd answers for the services.
    let (services, ()) = crate::parallel::join(
        || checks::check_services(host, &p.services()),
        || host.podman.look_at_images(&reads.images),
    );
    let unhealthy = match services {
        Err(FlowError::Unhealthy(which)) if resuming => Some(which),
        other => other.map(|()| None)?,
    };
    if p.image_archive.is_none() {
        checks::check_images(host, &p.images())?;
    }
    let how = if inv.check_mode {
        "all checks passed".to_string()
    } else {
        let lease::Took { taken, moved } = lease::take(cx, host, &mut report)?;
        if moved {
            remembered.forget();
        }
        report.began = true;
        match taken {
            Taken::Resumed { from, found } => {
                format!("resuming an interrupted run ({from}, {found})")
            }
            Taken::Own | Taken::Fresh => "all checks passed".into(),
        }
    };
    let mut msg = format!("preflight for {flow} to {stream}: {how}");
    if let Some(which) = unhealthy {
        msg = format!("{msg} ({which}, which the resumed run converges)");
    }
    if !report.began {
        return after_lease(cx, inv, host, report, msg, quiet);
    }
    // Once the lease is this run's, every failure is a result that names the run, so the
    // role's recovery ends it (flow_state action=end) instead of skipping it for want of a
    // run_id.
    let named = report.clone();
    let out = after_lease(cx, inv, host, report, msg, quiet).or_else(|e| {
        let report = Report {
            touched: cx.state.checkpoint(&cx.flow).exists(),
            ..named
        };
        Ok(Outcome::default().failed(e.to_string()).with_data(&report))
    });
    lease::release_untouched(cx, out)
}

/// The rest of `begin`, once the lease is this run's: the target, then the fetch and the plan,
/// and the finish when nothing is to do.
fn after_lease(
    cx: &Context,
    inv: &Invocation,
    host: &Host,
    mut report: Report,
    mut msg: String,
    quiet: quiet::Quiet,
) -> Result<Outcome, FlowError> {
    let p = cx.p;
    let (flow, stream) = (&cx.flow, &cx.stream);
    if let Some(t) = &p.target {
        report.target_written = target::ensure(host, &p.systemd_dir, t, inv.check_mode)?;
        if report.target_written {
            let verb = if inv.check_mode {
                "would write"
            } else {
                "wrote"
            };
            msg = format!("{msg}; {verb} {t}");
        }
    }
    if !plan::wanted(p) {
        report.work = true;
        return Ok(Outcome::new(report.target_written, msg).with_data(&report));
    }
    // From here on the host may be changed; a failure says whether it was, for recovery.
    let checkpoint = cx.state.checkpoint(flow);
    let planned = match plan::make(p, inv, host, flow, &cx.run_id) {
        Ok(planned) => planned,
        Err(e) => {
            report.touched = report.began && checkpoint.exists();
            return Ok(Outcome::default().failed(e.to_string()).with_data(&report));
        }
    };
    report.touched = report.began && checkpoint.exists();
    report.work = planned.work();
    report.plan = planned.units_result();
    report.migrations = Some(planned.migrations.clone());
    let units = &planned.units;
    if units.failed {
        let mut out = Outcome::default()
            .failed(units.msg.clone())
            .with_data(&report);
        out.mask_also = planned.revealed;
        return Ok(out);
    }
    if !report.work && !inv.check_mode {
        finish(cx, inv)?;
        quiet.keep(&cx.state, host);
        report.finished = true;
        report.touched = false;
        msg = format!("{msg}; nothing to do, so {flow} finished on stream {stream}");
    } else {
        let pending: Vec<&str> = planned
            .migrations
            .iter()
            .filter(|m| m.pending)
            .map(|m| m.source.as_str())
            .collect();
        msg = format!("{msg}; {}", units.msg);
        if !pending.is_empty() {
            msg = format!("{msg}; migrations pending: {}", pending.join(", "));
        }
    }
    let mut out = Outcome::new(units.changed || report.target_written, msg).with_data(&report);
    out.diff = units.diff.clone();
    out.warnings = units.warnings.clone();
    out.mask_also = planned.revealed;
    out.mask_also.extend(units.mask_also.iter().cloned());
    Ok(out)
}

/// Records the stream and releases the lease: only the run that owns it may.
fn finish(cx: &Context, inv: &Invocation) -> Result<(), FlowError> {
    if inv.check_mode {
        return Ok(());
    }
    let leases = &cx.leases;
    let _lock = leases.lock(&cx.run_id)?;
    if let Some(l) = leases.read()?
        && l.run_id != cx.run_id
    {
        return Err(FlowError::NotOwner {
            holder: l.run_id,
            run_id: cx.run_id.clone(),
        });
    }
    let flow = &cx.flow;
    atomic_write(
        &cx.stream_path,
        format!("{}\n", cx.stream).as_bytes(),
        0o644,
    )?;
    // The run is done; the checkpoint of how things were before it is no longer needed.
    remove_file(&cx.state.checkpoint(flow))?;
    // Every staged text was installed by the run's start, or is not wanted any more.
    cx.state.drop_stage(flow)?;
    // What this run stopped is running again; a later recovery must not restart it.
    remove_file(&cx.state.stop_record(flow))?;
    remove_file(leases.path())?;
    Ok(())
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, FlowError> {
    // Read before podman is reached: a bad auth_file fails with nothing touched.
    let registry = crate::registry::HttpRegistry::for_auth_file(p.auth_file.as_deref())
        .map_err(crate::registry::RegistryError::from)
        .map_err(crate::container_unit::UnitError::from)?;
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?
        .with_registry_auth(registry.pull_auth());
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    run(p, inv, &Host::real(&podman, &registry, &systemd))
}

#[cfg(test)]
mod begin_tests;
#[cfg(test)]
mod stage_tests;
#[cfg(test)]
mod tests;
