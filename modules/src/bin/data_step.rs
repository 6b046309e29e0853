//! refit.containers.data_step: move a database to a new major in a new data volume.

use refit_core::{ansible, datastep};
use std::process::ExitCode;

fn main() -> ExitCode {
    ansible::run(&datastep::spec::SPEC, datastep::run_on_host)
}
