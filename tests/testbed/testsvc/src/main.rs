//! PID 1 of every test container (tests/testbed/image). The environment picks what it does:
//! VERSION is what GET /version answers, MODE a behaviour (serve, crash, hang, stubborn),
//! SCHEMA the schema version this build needs, checked against SCHEMA_FILE when that is set.
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
    use super::schema_check;

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
