//! flow_state's preflight against fake seams: every refusal happens before anything is written.

use super::run;
use super::spec::SPEC;
use crate::ansible::driver::respond;
use crate::host::Host;
use crate::testing::{FakeClock, FakePodman, FakeRegistry, FakeSystemd};
use serde_json::{Value, json};

fn begin(dir: &std::path::Path, systemd: &FakeSystemd, podman: &FakePodman, extra: Value) -> Value {
    let mut args = json!({
        "flow": "update", "stream": "1.0", "run_id": "r1",
        "state_dir": dir.join("state"), "image_store": dir,
        "min_free_mb": 1,
    });
    for (k, v) in extra.as_object().expect("object") {
        args[k] = v.clone();
    }
    let path = dir.join("args.json");
    std::fs::write(&path, args.to_string()).expect("write args");
    let clock = FakeClock::default();
    let host = Host {
        systemd,
        podman,
        registry: &FakeRegistry::default(),
        clock: &clock,
        quadlet: &crate::testing::FakeQuadlet::default(),
    };
    respond(&SPEC, &path, |p, inv| run(p, inv, &host))
}

#[test]
fn a_healthy_host_passes_and_takes_the_lease() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = begin(
        dir.path(),
        &FakeSystemd::with_active("db.service", "i1"),
        &FakePodman::default(),
        json!({"services": ["db"]}),
    );
    assert_eq!(out["failed"], json!(false), "{out}");
    assert!(dir.path().join("state/flow-lease.json").exists());
}

#[test]
fn refusals_name_the_reason_and_write_nothing() {
    let mut failed = FakeSystemd::with_active("db.service", "i1");
    if let Some(st) = failed.units.get_mut("db.service") {
        st.props.insert("ActiveState".into(), "failed".into());
        st.props.insert("Result".into(), "exit-code".into());
    }
    let unreachable = FakePodman {
        unreachable: true,
        ..FakePodman::default()
    };
    let ok = FakeSystemd::default();
    let fine = FakePodman::default();
    let cases: Vec<(&str, &FakeSystemd, &FakePodman, Value)> = vec![
        (
            "is failed (Result=exit-code)",
            &failed,
            &fine,
            json!({"services": ["db"]}),
        ),
        (
            "podman API at /fake/podman.sock is unreachable",
            &ok,
            &unreachable,
            json!({}),
        ),
        (
            "MiB free, less than the",
            &ok,
            &fine,
            json!({"min_free_mb": 1_000_000_000}),
        ),
        (
            "not present locally",
            &ok,
            &fine,
            json!({"images": ["svc:1"]}),
        ),
        (
            "no stream to upgrade from",
            &ok,
            &fine,
            json!({"flow": "upgrade", "stream": "1.1"}),
        ),
    ];
    for (want, systemd, podman, extra) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = begin(dir.path(), systemd, podman, extra);
        assert_eq!(out["failed"], json!(true), "{out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(
            msg.starts_with("preflight: ") && msg.contains(want),
            "{want}: {msg}"
        );
        assert!(
            !dir.path().join("state").exists(),
            "{want}: the state dir was written"
        );
    }
}
