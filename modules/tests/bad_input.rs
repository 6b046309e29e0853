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

/// Runs `module` on each case's args, on a host with no podman socket, and checks its message.
fn refuse_all(module: &str, key: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut wrong = Vec::new();
    for case in cases(key) {
        let mut args = json!({
            "quadlet_dir": dir.path().join("quadlet"),
            "state_dir": dir.path().join("state"),
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
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        !dir.path().join("state").exists() && !dir.path().join("quadlet").exists(),
        "bad input created a dir"
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
