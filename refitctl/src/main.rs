//! refitctl: refit's front door. It runs the collection's playbooks with ansible-playbook,
//! remembers the parameters of the last successful run, and ends with a documented exit code.

mod cli;
mod commands;
mod deployment;
mod diffs;
mod ended;
mod error;
mod events;
mod fleet;
mod follow;
mod guard;
mod history;
mod json;
mod memory;
mod playbook;
mod report;
mod runlog;
mod signals;
mod version;

use clap::{CommandFactory, FromArgMatches};
use error::CtlError;
use events::Ending;
use std::process::ExitCode;

fn main() -> ExitCode {
    refit_core::logging::init(0);
    // `--version` names the collection too (version.rs); clap keeps the text for the process.
    let command = cli::Cli::command().version(&*Box::leak(version::text().into_boxed_str()));
    let cli = match command
        .try_get_matches()
        .and_then(|m| cli::Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            return ExitCode::from(64);
        }
        Err(e) => {
            // --help and --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let log = runlog::RunLog::start(commands::name(&cli.command), &args);
    let ending = match commands::run(&cli.command, &log) {
        Ok(ending) => ending,
        Err(e @ CtlError::Interrupted(i)) => {
            eprintln!("refitctl: {e}");
            Ending::Interrupted(i)
        }
        Err(e) => Ending::Failed(e.to_string()),
    };
    let last = match &ending {
        Ending::Refused(why) => format!("refitctl: refused by preflight, nothing touched: {why}"),
        Ending::Failed(why) => format!("refitctl: failed: {why}"),
        Ending::Interrupted(i) => format!("refitctl: interrupted by {}", i.name()),
        Ending::Changed => "changed".into(),
        Ending::Unchanged => "nothing changed".into(),
    };
    if matches!(ending, Ending::Refused(_) | Ending::Failed(_)) {
        eprintln!("{last}");
    }
    let code = ending.code(cli.command.common().detailed_exitcode);
    log.end(code, &last);
    ExitCode::from(code)
}

#[cfg(test)]
mod snapshots;
