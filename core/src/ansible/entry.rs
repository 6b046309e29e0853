//! A module binary's entry point: its own flags (`--help`, `--doc`, `--version`), or an args
//! file answered in place (driver.rs) or by a detached worker (detach.rs), and the one JSON
//! object Ansible reads on stdout.

use super::driver::Invocation;
use super::result::{Outcome, failure_json};
use super::spec::ModuleSpec;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Runs a module: `body` gets typed parameters and the invocation, and returns its outcome.
/// Errors become `failed` results whose message is the error's text.
pub fn run<P, E, F>(spec: &ModuleSpec, body: F) -> ExitCode
where
    P: DeserializeOwned,
    E: std::fmt::Display,
    F: FnOnce(P, &Invocation) -> Result<Outcome, E>,
{
    let argv: Vec<String> = std::env::args().collect();
    let result = match argv.get(1).map(String::as_str) {
        Some("--help" | "-h") => return print_text(&spec.help()),
        // The sidecar's `options:`, which `make sidecars` writes from this.
        Some("--doc") => return print_text(&spec.doc_options()),
        Some("--version" | "-V") => {
            return print_text(&format!(
                "{} (refit.containers) {}\n",
                spec.name,
                env!("CARGO_PKG_VERSION")
            ));
        }
        Some(path) => match super::detach::respond(spec, Path::new(path), body) {
            Some(result) => result,
            // Detached: the result goes to the run dir, and the ticket has been printed.
            None => return ExitCode::SUCCESS,
        },
        None => failure_json(&format!(
            "{} is an Ansible module: run it as `{} ARGS_FILE`, or see `{} --help`",
            spec.name, spec.name, spec.name
        )),
    };
    let failed = result
        .get("failed")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut out = std::io::stdout().lock();
    // Nothing useful can be done if stdout is gone; Ansible then reports the missing output.
    let _ = writeln!(out, "{result}");
    let _ = out.flush();
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_text(text: &str) -> ExitCode {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    ExitCode::SUCCESS
}
