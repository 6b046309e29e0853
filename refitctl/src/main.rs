//! refitctl: refit's front door. It runs the collection's playbooks with ansible-playbook,
//! remembers the parameters of the last successful run, and ends with a documented exit code.

mod cli;
mod commands;
mod error;
mod events;
mod memory;
mod playbook;
mod report;
mod signals;

use clap::Parser;
use error::CtlError;
use events::Ending;
use std::process::ExitCode;

fn main() -> ExitCode {
    refit_core::logging::init(0);
    let cli = match cli::Cli::try_parse() {
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
    let ending = match commands::run(&cli.command) {
        Ok(ending) => ending,
        Err(e @ CtlError::Interrupted(i)) => {
            eprintln!("refitctl: {e}");
            Ending::Interrupted(i)
        }
        Err(e) => Ending::Failed(e.to_string()),
    };
    match &ending {
        Ending::Refused(why) => eprintln!("refitctl: refused by preflight, nothing touched: {why}"),
        Ending::Failed(why) => eprintln!("refitctl: failed: {why}"),
        Ending::Unchanged | Ending::Changed | Ending::Interrupted(_) => {}
    }
    ExitCode::from(ending.code())
}

#[cfg(test)]
mod snapshots;
