//! SIGTERM, SIGINT and SIGHUP sent to refitctl alone, with a fake ansible-playbook that takes
//! a while to stop: the signal reaches the child, a second refitctl is refused with the first
//! named while the child is still stopping, and refitctl exits 128 + the signal only after the
//! child has exited.

use rustix::process::{Pid, Signal};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Records its pid and process group, and on SIGINT, SIGTERM or SIGHUP stops only once the
/// test writes `release` (30 s at most), leaving a note of the signal and of the end: the test,
/// however slowly a loaded machine runs it, meets a child that is still stopping.
const FAKE: &str = r#"#!/bin/sh
read -r _ _ _ _ pgid _ < /proc/$$/stat
echo "$$ $pgid" > "$FAKE_DIR/child"
stop() {
    echo "$1" > "$FAKE_DIR/signal"
    i=0
    while [ ! -e "$FAKE_DIR/release" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    echo done > "$FAKE_DIR/done"
    exit 0
}
trap 'stop INT' INT
trap 'stop TERM' TERM
trap 'stop HUP' HUP
i=0
while [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
exit 3
"#;

fn refitctl(dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("refitctl"));
    cmd.args(["update", "--deployment"])
        .arg(dir.join("deployment.yml"))
        .env("REFITCTL_STATE_DIR", dir.join("state"))
        .env("REFITCTL_LOG_DIR", dir.join("log"))
        .env("REFITCTL_ANSIBLE_PLAYBOOK", dir.join("ansible-playbook"))
        .env("FAKE_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("deployment.yml"), "refit_services: []\n").expect("write");
    let fake = dir.path().join("ansible-playbook");
    std::fs::write(&fake, FAKE).expect("write fake");
    let mut perms = std::fs::metadata(&fake).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).expect("chmod");
    dir
}

/// Waits, at most 10 s, for `path` to hold a line.
fn wait_for(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: i32) -> bool {
    Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}

fn signal(child: &Child, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, signal).expect("kill");
}

/// `name` as the shell's trap names the signal.
fn interrupted(sig: Signal, name: &str, code: i32) {
    let dir = setup();
    let first = refitctl(dir.path()).spawn().expect("refitctl starts");
    let note = wait_for(&dir.path().join("child"));
    let (child, group) = note.trim().split_once(' ').expect("pid and pgid");
    let child: i32 = child.parse().expect("pid");
    assert_eq!(
        group,
        child.to_string(),
        "the child leads a group of its own"
    );

    signal(&first, sig);
    assert_eq!(wait_for(&dir.path().join("signal")).trim(), name);
    // The child is still stopping: the lock is held, and its holder named.
    assert!(!dir.path().join("done").exists());
    let second = refitctl(dir.path()).output().expect("second refitctl runs");
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("refitctl update, pid {}", first.id())),
        "{err}"
    );
    assert!(alive(child), "the child is still stopping");

    std::fs::write(dir.path().join("release"), "").expect("release");
    let out = first.wait_with_output().expect("first refitctl ends");
    assert!(
        dir.path().join("done").exists(),
        "refitctl ended before its child"
    );
    assert!(!alive(child), "the child is gone");
    assert_eq!(out.status.code(), Some(code), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("refitctl: interrupted by SIG{name}")),
        "{err}"
    );
    assert!(
        !dir.path().join("state/parameters.json").exists(),
        "an interrupted run remembers nothing"
    );
}

#[test]
fn sigterm_reaches_the_child_and_refitctl_exits_143_after_it() {
    interrupted(Signal::TERM, "TERM", 143);
}

#[test]
fn sigint_reaches_the_child_and_refitctl_exits_130_after_it() {
    interrupted(Signal::INT, "INT", 130);
}

#[test]
fn sighup_of_a_closed_terminal_reaches_the_child_too() {
    interrupted(Signal::HUP, "HUP", 129);
}
