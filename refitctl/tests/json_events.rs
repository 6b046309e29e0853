//! `refitctl update --json`: the run's events on stdout as JSON lines while the run goes on (a
//! progress event before the run's end), the progress text and the summary on stderr. A fake
//! ansible-playbook writes the events file as the progress callback and refit's actions do.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Instant;

/// A progress event first, then waits (at most 30 s) for the test's `go` before the task's
/// result and the closing stats, noting whether `go` came: the test writes it only after it read
/// the progress event, which can only reach stdout before the run's end if refitctl follows the
/// file. No clock decides, so a loaded machine cannot fail it.
const FAKE: &str = r#"#!/bin/sh
echo "   0.1s  th1      fetch    fake progress"
echo '{"host": "th1", "phase": "fetch", "action": "refit.containers.container_unit", "progress": {"kind": "begin", "line": "pulling app:1"}}' >> "$REFIT_EVENTS_FILE"
i=0
while [ ! -e "$FAKE_DIR/go" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$FAKE_DIR/go" ] && echo yes > "$FAKE_DIR/go-seen"
echo '{"host": "th1", "task": "t", "phase": "fetch", "action": "refit.containers.container_unit", "status": "ok", "result": {"changed": false}}' >> "$REFIT_EVENTS_FILE"
echo '{"stats": {"th1": {"ok": 1, "changed": 0, "failures": 0, "unreachable": 0, "rescued": 0}}}' >> "$REFIT_EVENTS_FILE"
"#;

#[test]
fn update_json_prints_the_events_as_they_come_and_the_text_on_stderr() {
    let state = tempfile::tempdir().expect("tempdir");
    let dir = state.path();
    let fake = dir.join("ansible-playbook");
    std::fs::write(&fake, FAKE).expect("write fake");
    let mut perms = std::fs::metadata(&fake).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).expect("chmod");
    let deployment = dir.join("deployment.yml");
    std::fs::write(&deployment, "refit_services: []\n").expect("write");

    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_refitctl"))
        .args(["update", "--json", "--deployment"])
        .arg(&deployment)
        .env("REFITCTL_STATE_DIR", dir)
        .env("REFITCTL_LOG_DIR", dir.join("log"))
        .env("REFITCTL_ANSIBLE_PLAYBOOK", &fake)
        .env("FAKE_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("first line");
    let waited = started.elapsed();
    std::fs::write(dir.join("go"), "").expect("go");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the rest");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("exits");

    let progress: serde_json::Value = serde_json::from_str(&first).expect("a JSON line");
    assert_eq!(progress["progress"]["line"], "pulling app:1", "{first}");
    assert!(
        dir.join("go-seen").exists(),
        "the progress event came only after {waited:?}, at the run's end"
    );
    let lines: Vec<serde_json::Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2, "{rest}");
    assert_eq!(lines[0]["status"], "ok");
    assert!(lines[1].get("stats").is_some(), "{rest}");
    assert!(stderr.contains("fake progress"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}
