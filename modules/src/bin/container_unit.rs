//! refit.containers.container_unit: replace a quadlet unit in place, wait until it runs.

use refit_core::{ansible, container_unit};
use std::process::ExitCode;

fn main() -> ExitCode {
    ansible::run(&container_unit::spec::SPEC, container_unit::run_on_host)
}
