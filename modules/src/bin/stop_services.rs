//! refit.containers.stop_services: stop exactly what must stop, restore exactly what ran.

use refit_core::{ansible, stop_services};
use std::process::ExitCode;

fn main() -> ExitCode {
    ansible::run(&stop_services::spec::SPEC, stop_services::run_on_host)
}
