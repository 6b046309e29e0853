//! PID 1 of every test container (tests/testbed/image). The environment picks what it does:
//! VERSION is what GET /version answers, MODE a behaviour (serve, crash, hang, stubborn),
//! SCHEMA the schema version this build needs, checked against SCHEMA_FILE when that is set;
//! CONFIG_FILES, colon-separated, are config files it refuses to start on when one says
//! `mode: crash` (a deploy tool's bad change to a mounted config file or secret).
//! It serves on the sockets systemd passes (LISTEN_FDS, for a socket-activated unit) and
//! otherwise on 127.0.0.1:$PORT, and says READY=1 on NOTIFY_SOCKET once it does (Notify=true).

mod http;
mod listen;
mod notify;
mod signals;

use std::process::ExitCode;
use std::time::Duration;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn main() -> ExitCode {
    let version = env("VERSION", "0.0.0");
    let mode = env("MODE", "serve");
    let schema = env("SCHEMA", "1");
    let port = env("PORT", "8080");
    eprintln!("svc {version} mode={mode} schema={schema} port={port}");
    match mode.as_str() {
        "crash" => {
            eprintln!("crashing now");
            return ExitCode::FAILURE;
        }
        // Runs but never listens, so any health check against /version fails forever.
        "hang" => {
            signals::exit_on_term();
            idle()
        }
        // Catches SIGTERM and does nothing: a stop must fall back to SIGKILL.
        "stubborn" => {
            signals::ignore_term();
            idle()
        }
        _ => {}
    }
    signals::exit_on_term();
    if let Err(message) = config_check(&env("CONFIG_FILES", "")) {
        eprintln!("{message}");
        return ExitCode::FAILURE;
    }
    if let Err(message) = schema_check(&schema, std::env::var("SCHEMA_FILE").ok().as_deref()) {
        eprintln!("{message}");
        return ExitCode::FAILURE;
    }
    match listen::listeners(&port) {
        Ok(listeners) => {
            notify::ready();
            http::serve(listeners, &version)
        }
        Err(e) => {
            eprintln!("cannot listen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn idle() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// A service given a config it cannot use fails at start: any of `files` (colon-separated)
/// with the line `mode: crash`. A file it cannot read is no refusal: the container runtime
/// fails a missing mount before this runs.
fn config_check(files: &str) -> Result<(), String> {
    for file in files.split(':').filter(|f| !f.is_empty()) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.lines().any(|l| l.trim() == "mode: crash") {
            return Err(format!("{file} says mode: crash: refusing to start on it"));
        }
    }
    Ok(())
}

/// A "migrating" app refuses to start on a schema older than its own, which makes a missed
/// migration visible as a failed start. A missing or unreadable file counts as schema 0.
fn schema_check(schema: &str, file: Option<&str>) -> Result<(), String> {
    let Some(file) = file else {
        return Ok(());
    };
    let need: u64 = schema.trim().parse().unwrap_or(0);
    let have: u64 = std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if have < need {
        return Err(format!(
            "schema {have} in {file} is older than {need}: run the migrations first"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{config_check, schema_check};

    #[test]
    fn a_config_file_saying_crash_refuses_to_start() {
        let dir = std::env::temp_dir().join(format!("testsvc-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (good, bad) = (dir.join("good.yaml"), dir.join("bad.yaml"));
        std::fs::write(&good, "mode: 2\n").expect("write");
        std::fs::write(&bad, "a: 1\nmode: crash\n").expect("write");
        let (good, bad) = (good.display().to_string(), bad.display().to_string());
        assert_eq!(config_check(""), Ok(()));
        assert_eq!(config_check(&good), Ok(()));
        assert!(config_check(&format!("{good}:{bad}")).is_err_and(|m| m.contains("mode: crash")));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn an_older_or_missing_schema_refuses_to_start() {
        let dir = std::env::temp_dir().join(format!("testsvc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("schema");
        std::fs::write(&file, "2\n").expect("write");
        let path = file.to_str().expect("utf-8 path");
        assert_eq!(schema_check("2", Some(path)), Ok(()));
        assert!(schema_check("3", Some(path)).is_err_and(|m| m.contains("run the migrations")));
        assert!(schema_check("1", Some("/nonexistent/schema")).is_err());
        assert_eq!(schema_check("9", None), Ok(()));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
