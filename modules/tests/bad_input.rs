//! Issue 14: every refusal of bad input names its parameter, and comes before podman or
//! systemd is asked: the bare binaries, with no podman socket, give the messages the testbed
//! scenario test_container_unit_bad_input.yml expects. Both read the cases from one file.

use assert_cmd::Command;
use serde_json::{Value, json};

/// The secret_env value the cases use; no result may hold it.
const SECRET: &str = "hunter22";

fn cases(key: &str) -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/integration/vars/bad_input.json"
    );
    let text = std::fs::read_to_string(path).expect("read the cases");
    let all: Value = serde_json::from_str(&text).expect("cases are JSON");
    all[key].as_array().cloned().expect("a list of cases")
}

/// What a dir holds: each path under it with its type, mode and content, to compare.
fn snapshot(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            out.push(format!("{} absent", d.display()));
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).expect("stat");
            let content = if m.is_file() {
                std::fs::read_to_string(&p).unwrap_or_default()
            } else {
                todo.push(p.clone());
                String::new()
            };
            out.push(format!(
                "{} {:o} {content:?}",
                p.display(),
                m.permissions().mode()
            ));
        }
    }
    out.sort();
    out
}

/// Runs `module` on each case's args, on a host with no podman socket, and checks its message:
/// once where the state and quadlet dirs are missing (none is made), once where they hold a
/// unit and state (nothing in them changes, not even a lock or a key is added).
fn refuse_all(module: &str, key: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = dir.path().join("held");
    std::fs::create_dir_all(held.join("quadlet")).expect("mkdir");
    std::fs::create_dir_all(held.join("state/units")).expect("mkdir");
    std::fs::write(
        held.join("quadlet/app.container"),
        "[Container]\nImage=svc:1\n",
    )
    .expect("write");
    std::fs::write(held.join("state/stream"), "1.0\n").expect("write");
    let before = snapshot(&held);
    let mut wrong = Vec::new();
    for root in [dir.path().join("new"), held.clone()] {
        for case in cases(key) {
            let mut args = json!({
                "quadlet_dir": root.join("quadlet"),
                "state_dir": root.join("state"),
                "podman_socket": "/nonexistent/podman.sock",
            });
            for (k, v) in case["args"].as_object().expect("args") {
                args[k] = v.clone();
            }
            let path = dir.path().join("args.json");
            std::fs::write(&path, args.to_string()).expect("write args");
            let out = Command::cargo_bin(module)
                .expect("binary")
                .arg(&path)
                .output()
                .expect("run");
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let result: Value = serde_json::from_str(&stdout).unwrap_or_default();
            let msg = result["msg"].as_str().unwrap_or_default();
            let needle = case["msg"].as_str().expect("msg");
            if result["failed"] != json!(true) || !msg.contains(needle) || stdout.contains(SECRET) {
                wrong.push(format!(
                    "{}\n  wanted {needle:?}\n  got    {stdout}",
                    case["args"]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(!dir.path().join("new").exists(), "bad input created a dir");
    assert_eq!(
        snapshot(&held),
        before,
        "bad input changed the state or quadlet dir"
    );
}

#[test]
fn container_unit_refuses_bad_input_by_parameter_without_podman() {
    refuse_all("container_unit", "t_cases");
}

#[test]
fn run_migrations_refuses_bad_input_by_parameter_without_podman() {
    refuse_all("run_migrations", "t_migration_cases");
}

/// refit's action (plugins/plugin_utils/cached_binary.py) sends the args on standard input,
/// named `-`: the same refusal comes back as from an args file.
#[test]
fn args_on_standard_input_are_judged_as_an_args_file_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = json!({"name": "a/b", "image": "svc:1", "state_dir": dir.path().join("state")});
    let out = Command::cargo_bin("container_unit")
        .expect("binary")
        .arg("-")
        .write_stdin(args.to_string())
        .output()
        .expect("run");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(result["failed"], json!(true), "{result}");
    let msg = result["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("name"), "{msg}");
    assert!(
        !dir.path().join("state").exists(),
        "bad input created a dir"
    );
}
