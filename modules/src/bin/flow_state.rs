//! refit.containers.flow_state: preflight, the run lease and the recorded stream of a flow.

use refit_core::{ansible, flow};
use std::process::ExitCode;

fn main() -> ExitCode {
    ansible::run(&flow::spec::SPEC, flow::run_on_host)
}
