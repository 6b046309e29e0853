//! Each subcommand: which playbook it runs, with what, what it prints, and how it ends.

use crate::cli::{Command, Common};
use crate::diffs;
use crate::error::CtlError;
use crate::events::{Ending, Run};
use crate::json;
use crate::memory::Parameters;
use crate::playbook::Invocation;
use crate::report;
use crate::runlog::RunLog;
use refit_core::state::StateDir;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Runs `command`; what it prints goes to `log` too.
pub fn run(command: &Command, log: &RunLog) -> Result<Ending, CtlError> {
    let common = command.common();
    // With --json, stdout is for the JSON alone.
    let json = common.json;
    let state_dir = state_dir(common);
    let common = &crate::guard::absolute_flags(common)?;
    crate::guard::trusted_state_dir(&state_dir)?;
    let remembered = Parameters::load(&state_dir)?;
    let mut params = remembered.overlay(common)?;
    crate::guard::inputs(command, &params)?;
    crate::guard::make_state_dir(&state_dir)?;
    // One refitctl at a time per state dir; the modules lock each host on their own. The
    // ansible-playbook it starts holds the lock too, so a refitctl killed outright cannot let
    // a second one start beside the run it left going.
    let lock = StateDir::new(&state_dir).lock_at_once(&format!("refitctl {}", name(command)))?;
    lock.share_with_children()
        .map_err(refit_core::state::StateError::from)?;
    crate::guard::remove_stale_events(&state_dir);
    let mut extra = Map::new();
    // Not remembered: it chooses which memory (state_dir) applies.
    if let Some(user) = &common.scope_user {
        extra.insert("refit_scope".into(), Value::from("user"));
        extra.insert("refit_scope_user".into(), Value::from(user.as_str()));
    }
    // Not remembered, like --limit: a canary is a choice for one run.
    if let Some(c) = &common.canary {
        extra.insert("refit_canary_hosts".into(), Value::from(c.as_str()));
    }
    if let Some(s) = common.canary_soak {
        extra.insert("refit_canary_soak".into(), Value::from(s));
    }
    if let Some(p) = common.max_fail_percentage {
        extra.insert("refit_max_fail_percentage".into(), Value::from(p));
    }
    // A flow's run is named here, so that refitctl knows which run it saw end (ended.rs); the
    // runs it saw end before are passed on, and their leases resumed at once.
    let flow_run = flow(command).map(refit_core::flow::run_id);
    if let Some(run_id) = &flow_run {
        extra.insert("flow_run_id".into(), Value::from(run_id.as_str()));
        let ended = crate::ended::load(&state_dir)?;
        if !ended.is_empty() {
            extra.insert("flow_ended_runs".into(), Value::from(ended));
        }
    }
    // Once ansible-playbook has exited, the run is over: noted when it did not finish, so the
    // next run resumes it at once; all forgotten when it finished (it left no lease).
    let ended = |result: Result<Run, CtlError>| {
        let finished = result
            .as_ref()
            .is_ok_and(|run| matches!(run.ending(), Ending::Unchanged | Ending::Changed));
        let noted = match &flow_run {
            Some(_) if common.check => Ok(()),
            Some(_) if finished => crate::ended::forget_all(&state_dir),
            Some(run_id) => crate::ended::note(&state_dir, run_id),
            None => Ok(()),
        };
        // Not worth hiding how the run ended for: the next run then waits out the grace.
        if let Err(e) = noted {
            stderr(log, &format!("refitctl: {e}\n"));
        }
        result
    };
    let invocation = |playbook: &str,
                      params: &Parameters,
                      extra: Map<String, Value>,
                      check: bool,
                      quiet: bool| {
        Invocation {
            playbook,
            params,
            extra,
            check: check || common.check,
            diff: common.diff,
            verbose: common.verbose,
            show_progress: !quiet,
            progress_to_stderr: json,
            // A run that changes things prints its events as they come; a read or a plan
            // prints one document at its end.
            follow_events: json && !check,
            limit: common.limit.as_deref(),
            state_dir: &state_dir,
            log,
        }
        .run()
    };
    let (run, remember) = match command {
        Command::Deploy(_) => (
            ended(invocation("deploy", &params, extra, false, false))?,
            true,
        ),
        Command::Update(_) => (
            ended(invocation("update", &params, extra, false, false))?,
            true,
        ),
        Command::Upgrade { to, .. } => {
            params.stream = Some(to.clone());
            (
                ended(invocation("upgrade", &params, extra, false, false))?,
                true,
            )
        }
        Command::Plan { to, .. } => {
            let playbook = match to {
                Some(to) => {
                    params.stream = Some(to.clone());
                    "upgrade"
                }
                None => "update",
            };
            let run = invocation(playbook, &params, extra, true, common.verbose == 0)?;
            return Ok(print_plan(&run, json, common.diff, log));
        }
        Command::Adopt { .. } => {
            let run = invocation("deploy", &params, extra, true, common.verbose == 0)?;
            return Ok(print_plan(&run, json, common.diff, log));
        }
        Command::Status { .. } => {
            let run = invocation("status", &params, extra, true, common.verbose == 0)?;
            let ending = run.ending();
            if !matches!(ending, Ending::Failed(_)) {
                stdout(
                    log,
                    &if json {
                        json::text(&json::status(&run))
                    } else {
                        report::status_table(&report::status_rows(&run))
                    },
                );
            }
            // Reading changes nothing, whatever the modules' check mode reported.
            return Ok(match ending {
                Ending::Changed => Ending::Unchanged,
                e => e,
            });
        }
        Command::Rollback { service, to, .. } => {
            if let Some(s) = service {
                extra.insert(
                    "refit_rollback_services".into(),
                    Value::from(vec![service_name(s)?]),
                );
            }
            if let Some(to) = to {
                extra.insert("refit_rollback_to".into(), Value::from(to.as_str()));
            }
            (invocation("rollback", &params, extra, false, false)?, false)
        }
        Command::History { service, .. } => {
            if let Some(s) = service {
                extra.insert(
                    "refit_history_services".into(),
                    Value::from(vec![service_name(s)?]),
                );
            }
            let run = invocation("history", &params, extra, true, common.verbose == 0)?;
            return Ok(crate::history::print(&run, json, |t| stdout(log, t)));
        }
    };
    let ending = run.ending();
    if !common.check {
        fleet_line(&run, &ending, &params, common, log);
    }
    if matches!(ending, Ending::Unchanged | Ending::Changed) {
        // A check run changed nothing; what it would change is its plan.
        if common.check {
            stderr(log, &report::plan_text(&report::plan(&run)));
        } else {
            stderr(log, &report::changes_text(&report::changes(&run)));
        }
        if common.diff {
            stderr(log, &diffs::text(&diffs::of_run(&run)));
        }
        if remember && !common.check {
            params.save(&state_dir)?;
        }
    }
    Ok(ending)
}

/// Over several hosts, which were updated, unchanged, failed and never touched. Only a run that
/// stopped can have left hosts untouched, so only then are the inventory's hosts asked for.
fn fleet_line(run: &Run, ending: &Ending, params: &Parameters, common: &Common, log: &RunLog) {
    let stopped = matches!(ending, Ending::Failed(_) | Ending::Refused(_));
    let play_hosts = match (&params.inventory, stopped) {
        (Some(inventory), true) => crate::fleet::list_hosts(
            &crate::playbook::ansible_playbook(),
            inventory,
            common.limit.as_deref(),
        ),
        (_, false) => Some(Vec::new()),
        // The default inventory is this host alone.
        (None, true) => Some(Vec::new()),
    };
    let Some(f) = crate::fleet::fleet(run, play_hosts.as_deref().unwrap_or_default()) else {
        return;
    };
    let hosts = f.updated.len() + f.unchanged.len() + f.failed.len() + f.untouched.len();
    if hosts > 1 || common.canary.is_some() {
        stderr(log, &crate::fleet::text(&f, play_hosts.is_some()));
    }
}

fn print_plan(run: &Run, as_json: bool, diff: bool, log: &RunLog) -> Ending {
    let ending = run.ending();
    if matches!(ending, Ending::Failed(_) | Ending::Refused(_)) {
        return ending;
    }
    let plans = report::plan(run);
    let diffs = if diff { diffs::of_run(run) } else { Vec::new() };
    if as_json {
        stdout(log, &json::text(&json::plan(&plans, &diffs)));
    } else {
        stdout(log, &report::plan_text(&plans));
        stdout(log, &diffs::text(&diffs));
    }
    if plans.iter().any(report::HostPlan::changes) {
        Ending::Changed
    } else {
        stderr(log, "refitctl: nothing to do\n");
        Ending::Unchanged
    }
}

fn state_dir(common: &Common) -> PathBuf {
    common
        .state_dir
        .clone()
        .or_else(|| std::env::var_os("REFITCTL_STATE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| {
            let name = match &common.scope_user {
                Some(user) => format!("refitctl-user-{user}"),
                None => "refitctl".to_string(),
            };
            Path::new(refit_core::state::DEFAULT_STATE_DIR).join(name)
        })
}

/// The flow a command runs, if it runs one.
fn flow(command: &Command) -> Option<refit_core::flow::Flow> {
    use refit_core::flow::Flow;
    match command {
        Command::Deploy(_) => Some(Flow::Deploy),
        Command::Update(_) => Some(Flow::Update),
        Command::Upgrade { .. } => Some(Flow::Upgrade),
        _ => None,
    }
}

pub fn name(command: &Command) -> &'static str {
    match command {
        Command::Deploy(_) => "deploy",
        Command::Update(_) => "update",
        Command::Upgrade { .. } => "upgrade",
        Command::Plan { .. } => "plan",
        Command::Adopt { .. } => "adopt",
        Command::Status { .. } => "status",
        Command::Rollback { .. } => "rollback",
        Command::History { .. } => "history",
    }
}

/// A service as the deployment names it: `content`, or a template `worker@`.
fn service_name(raw: &str) -> Result<String, CtlError> {
    let name = raw
        .trim_end_matches(".service")
        .trim_end_matches(".container");
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@:".contains(c))
        && !name.contains("..");
    if ok {
        Ok(name.to_string())
    } else {
        Err(CtlError::BadService(raw.to_string()))
    }
}

/// Tables, plans and JSON go to stdout, for pipes, and to the log; a closed pipe is not worth
/// failing over.
fn stdout(log: &RunLog, text: &str) {
    use std::io::Write;
    log.write(text);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// The summary of a run goes to stderr, and to the log.
fn stderr(log: &RunLog, text: &str) {
    log.write(text);
    eprint!("{text}");
}
