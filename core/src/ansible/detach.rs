//! A module call that lasts shows its progress: once it has run `DETACH_AFTER` with a step open
//! (a pull, a migration, a wait for health), it answers its round trip with a ticket, and goes on
//! working; the controller's action then reads the call's run dir (`STATE_DIR/runs/MODULE-PID`:
//! `events`, and at the end `result`) until the result is there
//! (plugins/plugin_utils/progress_poll.py). A call that ends sooner, or that is only slow (a
//! loaded host, a slow stop) with no step to show, answers as any module does and touches no run
//! dir: each look of the controller costs both sides a round trip, for nothing to show.
//!
//! The module (the process Ansible waits for) runs the work in a *worker*: itself, started again
//! with the args on standard input and `WORKER_ENV` naming the state dir. The module relays the
//! worker's first line: the result, or the ticket. Until it detaches, the worker dies with the
//! module (a kill -9 of the module still ends the work, as the kill-safety tests expect); after,
//! it lives on its own, in its own session, and holds `live` locked until it exits, so the action
//! tells a worker that was killed from one still at work. A worker whose controller was killed
//! finishes as a module always did; its run dir is removed by a later call once it is stale.

use super::driver::{Invocation, answer, parse_args, read_text};
use super::result::{Outcome, failure_json};
use super::spec::ModuleSpec;
use super::validate::validate;
use crate::progress::{Recorder, recorder};
use crate::state::{StateDir, atomic_write};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Set in the worker's environment to the state dir its run dir goes under.
pub const WORKER_ENV: &str = "REFIT_MODULE_WORKER";
/// The module's pid, in the worker's environment: a worker whose module is already gone stops.
const PARENT_ENV: &str = "REFIT_MODULE_PARENT";
/// How long a call answers its round trip as any module does. A converged no-op call takes
/// tens of milliseconds; a pull, a migration or a health wait takes seconds.
pub const DETACH_AFTER: Duration = Duration::from_millis(800);
/// How often a call past `DETACH_AFTER` with no step open looks whether one opened.
const STEP_LOOK: Duration = Duration::from_millis(100);
/// The key of the ticket a detached call answers with; progress_poll.py reads it.
pub const DETACHED_KEY: &str = "_refit_detached";
pub const EVENTS_FILE: &str = "events";
pub const RESULT_FILE: &str = "result";
/// Locked by the worker as long as it lives.
pub const LIVE_FILE: &str = "live";
/// A run dir whose worker is gone, left this long, is one no controller reads any more (one
/// reads it every quarter second): a later detaching call removes it.
const STALE_AFTER: Duration = Duration::from_secs(600);
/// How often the worker looks whether a step is due a tick.
const TICK_LOOK: Duration = Duration::from_secs(1);
/// How long the module waits for the worker's stderr to drain once the worker has exited.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// The worker's `live` lock, held until the process exits.
static LIVE: OnceLock<std::fs::File> = OnceLock::new();

/// The driver's `respond`, for a call that may detach: the result to print, or `None` when the
/// worker detached (its ticket is printed already).
pub fn respond<P, E, F>(spec: &ModuleSpec, path: &Path, body: F) -> Option<Value>
where
    P: DeserializeOwned,
    E: std::fmt::Display,
    F: FnOnce(P, &Invocation) -> Result<Outcome, E>,
{
    if let Some(state_dir) = std::env::var_os(WORKER_ENV) {
        return serve(spec, path, Path::new(&state_dir), body);
    }
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => return Some(failure_json(&e.to_string())),
    };
    match detachable(spec, path, &text).map(|state_dir| relay(&text, &state_dir)) {
        Some(Ok(result)) => Some(result),
        Some(Err(e)) => {
            tracing::debug!("the call runs undetached: cannot start its worker: {e}");
            Some(answer(spec, path, &text, body))
        }
        None => Some(answer(spec, path, &text, body)),
    }
}

/// The state dir of a call that may detach: the action follows its progress, it is not in check
/// mode (which writes nothing, not even a run dir), and its parameters are valid (bad input is
/// refused before anything starts). A call for a user's services runs undetached: its run dir
/// would be made in root's state dir before the call becomes the user, who could not write it.
fn detachable(spec: &ModuleSpec, path: &Path, text: &str) -> Option<PathBuf> {
    let mut args = parse_args(text, path).ok()?;
    if !args.inv.progress || args.inv.check_mode || !rustix::process::geteuid().is_root() {
        return None;
    }
    if args.params.get("scope").and_then(serde_json::Value::as_str) == Some("user") {
        return None;
    }
    if args.ignore_unknown {
        args.params.retain(|k, _| spec.option(k).is_some());
    }
    // As the driver reads them: an empty place (the flows' `flow_state_dir: ""`) means the
    // scope's own, which for root's scope is the spec's default.
    crate::scope::Scope::drop_empty_places(&mut args.params);
    let params = validate(spec, &args.params).ok()?;
    params.get("state_dir")?.as_str().map(PathBuf::from)
}

/// The module's side: starts the worker and relays its first line.
fn relay(text: &str, state_dir: &Path) -> std::io::Result<Value> {
    let argv: Vec<_> = std::env::args_os().collect();
    let mut cmd = Command::new(std::env::current_exe()?);
    // The same command line: what looks for a module by its args file finds the worker too.
    if let Some(name) = argv.first() {
        cmd.arg0(name);
    }
    let mut worker = cmd
        .args(argv.iter().skip(1))
        .env(WORKER_ENV, state_dir)
        .env(PARENT_ENV, std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let fed = worker
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(text.as_bytes()));
    // The worker's log, shown as the module's own while the module lives.
    let (drained, drain_done) = std::sync::mpsc::channel();
    if let Some(mut stderr) = worker.stderr.take() {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            let _ = std::io::stderr().write_all(&buf);
            let _ = drained.send(());
        });
    }
    let mut line = String::new();
    if let Some(stdout) = worker.stdout.take() {
        BufReader::new(stdout).read_line(&mut line)?;
    }
    let answer: Option<Value> = serde_json::from_str(line.trim()).ok();
    if answer
        .as_ref()
        .is_some_and(|a| a.get(DETACHED_KEY).is_some())
    {
        return Ok(answer.unwrap_or_default());
    }
    let status = worker.wait()?;
    let _ = drain_done.recv_timeout(STDERR_DRAIN);
    Ok(match (answer, fed) {
        (Some(result), _) => result,
        (None, Some(Err(e))) => failure_json(&format!(
            "the module could not hand its arguments to its worker process: {e}; run the task again"
        )),
        (None, _) => failure_json(&format!(
            "the module's worker process ended without an answer ({status}); it was killed, or \
             crashed: look at the host's journal, then run the task again"
        )),
    })
}

/// The worker's side: the work, answered on stdout, or into the run dir once detached.
fn serve<P, E, F>(spec: &ModuleSpec, path: &Path, state_dir: &Path, body: F) -> Option<Value>
where
    P: DeserializeOwned,
    E: std::fmt::Display,
    F: FnOnce(P, &Invocation) -> Result<Outcome, E>,
{
    let started = Instant::now();
    *recorder() = Some(Recorder::new(started));
    let state = StateDir::new(state_dir);
    let name = run_name(spec.name);
    let dir = state.runs_dir().join(&name);
    let parent = std::env::var(PARENT_ENV).ok();
    std::thread::spawn(move || watch(&state, &name, started, parent));
    // Its own session: a signal to the controller's process group (the local connection runs
    // modules in it) does not reach a detached worker; the module takes it down until then.
    let _ = rustix::process::setsid();
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        return Some(failure_json(&format!(
            "the module's worker could not read its arguments: {e}; run the task again"
        )));
    }
    let result = answer(spec, path, &text, body);
    let mut held = recorder();
    let detached = held.as_ref().is_some_and(Recorder::is_detached);
    if let Some(r) = held.as_mut() {
        r.close();
    }
    if !detached {
        return Some(result);
    }
    if let Err(e) = atomic_write(
        &dir.join(RESULT_FILE),
        format!("{result}\n").as_bytes(),
        0o600,
    ) {
        tracing::error!(
            "the call's result could not be written to {}: {e}",
            dir.display()
        );
    }
    None
}

/// The worker's watch: until the call detaches, the worker ends with the module (a kill -9 of
/// the module still ends the work, as the kill-safety tests expect); from `DETACH_AFTER` on it
/// detaches as soon as a step is open, and then ticks the open steps. A thread of its own, living
/// as long as the worker: the parent-death signal belongs to the thread that asked for it.
fn watch(state: &StateDir, name: &str, started: Instant, parent: Option<String>) {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let ppid = rustix::process::getppid().map(|p| p.as_raw_nonzero().to_string());
    if parent.is_some() && parent != ppid {
        // The module was gone before the signal was asked for: end as it would have ended us.
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
    std::thread::sleep(DETACH_AFTER.saturating_sub(started.elapsed()));
    loop {
        match detach(state, name) {
            Ok(Detach::NotYet) => std::thread::sleep(STEP_LOOK),
            Ok(Detach::Settled) => break,
            Err(e) => {
                tracing::debug!("the call stays attached: {e}");
                break;
            }
        }
    }
    loop {
        std::thread::sleep(TICK_LOOK);
        if let Some(r) = recorder().as_mut().filter(|r| r.is_detached()) {
            r.tick(Instant::now());
        }
    }
}

/// The run dir's name: the module and the worker's pid, unique among live workers.
fn run_name(module: &str) -> String {
    format!("{module}-{}", std::process::id())
}

#[derive(Debug, thiserror::Error)]
enum DetachError {
    #[error("{0}; the call goes on without showing its progress")]
    State(#[from] crate::state::StateError),
    #[error(
        "cannot prepare the run dir {path}: {source}; the call goes on without showing its progress"
    )]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a look whether to detach decided.
#[derive(Debug, PartialEq, Eq)]
enum Detach {
    /// The call detached, or answered already: no more looks.
    Settled,
    /// No step is open: nothing to show yet.
    NotYet,
}

/// Detaches the call unless it has answered or has no step open: its run dir made, its held
/// events written there, the ticket printed. Under the recorder's lock, so the call's answer
/// comes after, into the dir.
fn detach(state: &StateDir, name: &str) -> Result<Detach, DetachError> {
    let mut held = recorder();
    let Some(r) = held.as_mut().filter(|r| r.is_held()) else {
        return Ok(Detach::Settled);
    };
    if !r.has_open_step() {
        return Ok(Detach::NotYet);
    }
    let dir = run_dir(r, state, name)?;
    // From here the worker outlives the module.
    let _ = rustix::process::set_parent_process_death_signal(None);
    let ticket = json!({
        "changed": false,
        "failed": false,
        DETACHED_KEY: {"dir": dir, "pid": std::process::id()},
    });
    let mut out = std::io::stdout().lock();
    // A module already gone (its controller killed) reads no ticket; the work goes on.
    let _ = writeln!(out, "{ticket}");
    let _ = out.flush();
    drop(out);
    // The module exits once it has the ticket, closing the pipes it read: a later log line
    // (at -vvv) or print would fail with a broken pipe and end the call. Everything after
    // goes to the run dir; the standard streams go nowhere.
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
    Ok(Detach::Settled)
}

/// Makes the call's run dir, locks its `live` file for good, and sends `r`'s events there.
fn run_dir(r: &mut Recorder, state: &StateDir, name: &str) -> Result<PathBuf, DetachError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DetachError::Io { path, source }
    };
    let stale = state.runs_dir().join(name);
    if stale.exists() {
        // A dir of an earlier process of the same pid, never collected.
        std::fs::remove_dir_all(&stale).map_err(io(&stale))?;
    }
    let dir = state.ensure_run_dir(name)?;
    sweep(&state.runs_dir(), name);
    let open = |file: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(dir.join(file))
            .map_err(io(&dir.join(file)))
    };
    let live = open(LIVE_FILE)?;
    rustix::fs::flock(&live, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| io(&dir.join(LIVE_FILE))(e.into()))?;
    let _ = LIVE.set(live);
    r.detach(open(EVENTS_FILE)?).map_err(io(&dir))?;
    Ok(dir)
}

/// Removes the run dirs under `runs` (but `own`) whose worker is gone and which nobody read
/// for `STALE_AFTER`: a killed controller's. Best effort, as any cleanup of a cache.
fn sweep(runs: &Path, own: &str) {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if entry.file_name() == own || !old {
            continue;
        }
        let gone = std::fs::File::open(path.join(LIVE_FILE)).map_or(true, |f| {
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
        });
        if gone {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_stale_run_dir_of_a_gone_worker_is_swept_and_a_live_one_kept() {
        let d = tempfile::tempdir().expect("tmp");
        let runs = d.path();
        let old = std::time::SystemTime::now() - STALE_AFTER - Duration::from_secs(5);
        let mut held = Vec::new();
        for name in ["gone-1", "live-2", "fresh-3", "own-4"] {
            let dir = runs.join(name);
            std::fs::create_dir(&dir).expect("mkdir");
            let live = std::fs::File::create(dir.join(LIVE_FILE)).expect("live");
            if name.starts_with("live") {
                rustix::fs::flock(&live, rustix::fs::FlockOperation::LockExclusive).expect("lock");
                held.push(live);
            }
            if !name.starts_with("fresh") {
                std::fs::File::open(&dir)
                    .and_then(|f| f.set_modified(old))
                    .expect("age");
            }
        }
        sweep(runs, "own-4");
        let left: std::collections::BTreeSet<_> = std::fs::read_dir(runs)
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            left,
            ["fresh-3", "live-2", "own-4"].map(String::from).into()
        );
    }

    #[test]
    fn a_detached_call_writes_its_dir_private_with_the_held_events() {
        let d = tempfile::tempdir().expect("tmp");
        let state = StateDir::new(d.path().join("state"));
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        r.begin("pulling app:1".into(), None, t0);
        let dir = run_dir(&mut r, &state, "container_unit-1").expect("detached");
        assert!(r.is_detached());
        assert_eq!(dir, state.runs_dir().join("container_unit-1"));
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(EVENTS_FILE)), 0o600);
        let events = std::fs::read_to_string(dir.join(EVENTS_FILE)).expect("events");
        assert!(events.contains("\"pulling app:1\""), "{events}");
    }

    #[test]
    fn the_flows_empty_state_dir_means_the_scopes_own_and_a_user_call_stays_attached() {
        let spec = &crate::container_unit::spec::SPEC;
        let path = Path::new("args");
        let call = |extra: &str| {
            let text = format!(
                r#"{{"name": "app", "image": "app:1", "_refit_progress": true, "state_dir": ""{extra}}}"#
            );
            detachable(spec, path, &text)
        };
        // Only root's calls detach; a test run as another user sees none.
        let root = rustix::process::geteuid().is_root();
        let expected = root.then(|| PathBuf::from(crate::state::DEFAULT_STATE_DIR));
        assert_eq!(call(""), expected);
        assert_eq!(call(r#", "scope": "user", "scope_user": "app""#), None);
        assert_eq!(call(r#", "_ansible_check_mode": true"#), None);
    }
}
