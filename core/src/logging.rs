//! Logs go to stderr, never stdout: stdout carries the module's one JSON object.

use tracing_subscriber::EnvFilter;

/// `REFIT_LOG` (an EnvFilter directive) wins; otherwise Ansible's `-v` count sets the level.
pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "warn",
        1 | 2 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_env("REFIT_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
