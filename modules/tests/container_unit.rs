//! The container_unit binary speaks Ansible's protocol: args file in, one JSON object out.

use assert_cmd::Command;
use serde_json::{Value, json};

/// Runs the module on an args file holding `args`, and returns (exit code, parsed stdout).
fn run_with(args: &str, env: &[(&str, &str)]) -> (i32, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("args");
    std::fs::write(&path, args).expect("write args");
    let mut cmd = Command::cargo_bin("container_unit").expect("binary");
    cmd.arg(&path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "stdout must be exactly one JSON line: {stdout}"
    );
    let v: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    (out.status.code().unwrap_or(-1), v)
}

fn assert_msg_contains(out: &Value, needle: &str) {
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "msg lacks {needle:?}: {out}");
}

/// Parameters that reach the host: an unreachable socket stops the run right after validation.
fn args(extra: Value) -> String {
    let mut a = json!({
        "name": "hello",
        "image": "127.0.0.1:5000/svc:1.0",
        "podman_socket": "/nonexistent/podman.sock",
        "quadlet_dir": "/nonexistent/quadlet",
        "state_dir": "/nonexistent/state",
        "_ansible_check_mode": false,
        "_ansible_module_name": "container_unit",
        "_ansible_tmpdir": null,
        "_ansible_some_future_key": 1,
    });
    for (k, v) in extra.as_object().expect("object") {
        a[k] = v.clone();
    }
    a.to_string()
}

#[test]
fn a_malformed_args_file_fails_cleanly() {
    let (code, out) = run_with("{not json", &[]);
    assert_eq!(code, 1);
    assert_eq!(out["failed"], json!(true));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("is not valid JSON: key must be a string at line 1 column 2"),
        "{msg}"
    );
    assert!(
        msg.ends_with("it must be one JSON object of parameters"),
        "{msg}"
    );
}

#[test]
fn unknown_parameters_use_ansibles_wording() {
    let (code, out) = run_with(&args(json!({"imagee": "x"})), &[]);
    assert_eq!(code, 1);
    insta::assert_json_snapshot!(out);
}

#[test]
fn a_wrong_type_is_refused() {
    let (code, out) = run_with(&args(json!({"timeout": "soon"})), &[]);
    assert_eq!(code, 1);
    insta::assert_json_snapshot!(out);
}

#[test]
fn yes_and_42_are_coerced() {
    let (_, out) = run_with(
        &args(json!({"rollback": "YES", "timeout": "42", "min_healthy_time": 5.0})),
        &[],
    );
    let a = &out["invocation"]["module_args"];
    assert_eq!(
        (&a["rollback"], &a["timeout"], &a["min_healthy_time"]),
        (&json!(true), &json!(42), &json!(5))
    );
    assert_msg_contains(&out, "podman API");
}

#[test]
fn secrets_are_masked_in_module_args_and_messages() {
    let (_, out) = run_with(
        &args(json!({"secret_env": {"PW": "hunter22"}, "podman_socket": "/x/hunter22"})),
        &[],
    );
    let text = out.to_string();
    assert!(!text.contains("hunter22"), "{text}");
    assert_eq!(
        out["invocation"]["module_args"]["secret_env"],
        json!("VALUE_SPECIFIED_IN_NO_LOG_PARAMETER")
    );
    assert_msg_contains(&out, "/x/********");
}

#[test]
fn ignore_unknown_opts_drops_them() {
    let (_, out) = run_with(
        &args(json!({"imagee": "x", "_ansible_ignore_unknown_opts": true})),
        &[],
    );
    assert_msg_contains(&out, "podman API");
}

#[test]
fn a_panic_still_yields_a_failed_object() {
    let (code, out) = run_with(&args(json!({})), &[("REFIT_FORCE_PANIC", "1")]);
    assert_eq!(code, 1);
    insta::assert_json_snapshot!(out);
}

#[test]
fn help_and_version_say_what_it_is() {
    let help = Command::cargo_bin("container_unit")
        .expect("binary")
        .arg("--help")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.starts_with("container_unit - "), "{text}");
    assert!(
        text.contains("pull (str), default \"missing\", one of always|missing|never"),
        "{text}"
    );
    let bare = Command::cargo_bin("container_unit")
        .expect("binary")
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&bare.stdout).expect("json");
    assert_eq!(v["failed"], json!(true));
}
