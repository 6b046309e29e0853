use super::*;
use crate::testing::{FakePodman, FakeSystemd, respond_on};
use serde_json::json;

/// The module's answer to one step, through the driver as Ansible calls it, on fakes that
/// record every call that would touch the host.
fn answer(step: serde_json::Value) -> (serde_json::Value, usize, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = json!({
        "steps": [step],
        "stage": "upgrade",
        "quadlet_dir": dir.path().join("quadlet"),
        "state_dir": dir.path().join("state"),
    });
    let (podman, systemd) = (FakePodman::default(), FakeSystemd::default());
    let out = respond_on(&spec::SPEC, dir.path(), &args, &systemd, &podman, run_steps).out;
    let calls =
        podman.calls.lock().expect("calls").len() + systemd.calls.lock().expect("calls").len();
    (out, calls, dir.path().join("state").exists())
}

#[test]
fn bad_input_is_refused_by_parameter_before_anything_is_touched() {
    for (step, word) in [
        (
            json!({"unit": "db", "tables": ["pulp.core_task"]}),
            "tables",
        ),
        (
            json!({"unit": "db", "tables": ["pulp.public.t;DROP"]}),
            "tables",
        ),
        (json!({"unit": "db", "checks": ["SELECT 1"]}), "checks"),
        (
            json!({"unit": "db", "checks": ["pulp:SELECT 1\nSELECT 2"]}),
            "checks",
        ),
        (json!({"unit": "db", "data_dir": "data"}), "data_dir"),
        (json!({"unit": "db", "method": "rsync"}), "method"),
        (json!({"unit": "db", "transfer": "move"}), "transfer"),
        (json!({"unit": "../db"}), "../db"),
    ] {
        let (out, calls, state) = answer(step);
        assert_eq!(out["failed"], json!(true), "{out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(word), "{word}: {msg}");
        assert_eq!(calls, 0, "nothing asked of podman or systemd: {msg}");
        assert!(!state, "nothing written, not even a lock: {msg}");
    }
}

#[test]
fn a_unit_not_installed_yet_has_no_data_to_move() {
    let (out, calls, _) = answer(json!({"unit": "db"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(false), "{out}");
    assert_eq!(calls, 0);
}
