//! refit.containers.run_migrations: run a migration in a one-off container, only when pending.

use refit_core::{ansible, migrate};
use std::process::ExitCode;

fn main() -> ExitCode {
    ansible::run(&migrate::spec::SPEC, migrate::run_on_host)
}
