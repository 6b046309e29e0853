//! container_unit's check-mode plan of many units, each depending on the one before, against
//! the fake host seams (no podman, no systemd): what planning alone costs. Ignored in `cargo
//! test`; bench/plan_bench.py runs it in a release build with REFIT_PLAN_UNITS=N and reads the
//! CPU seconds it prints.

use super::spec::SPEC;
use super::{Host, run};
use crate::ansible::driver::respond;
use crate::testing::{FakeClock, FakePodman, FakeQuadlet, FakeRegistry, FakeSystemd};
use serde_json::{Value, json};

/// This thread's CPU time so far, in seconds (the first field of its schedstat, in ns).
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

#[test]
#[ignore = "a benchmark: bench/plan_bench.py runs it"]
#[allow(clippy::print_stdout)] // The figure is the bench's output, read by bench/plan_bench.py.
fn plan_units() {
    let n: usize = std::env::var("REFIT_PLAN_UNITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let units: Vec<Value> = (0..n)
        .map(|i| {
            let after: Vec<String> = i
                .checked_sub(1)
                .map(|p| format!("u{p}"))
                .into_iter()
                .collect();
            json!({"name": format!("u{i}"), "image": "svc:1", "depends_on": after})
        })
        .collect();
    let args = json!({
        "units": units, "_ansible_check_mode": true,
        "quadlet_dir": dir.path().join("quadlet"), "state_dir": dir.path().join("state"),
    });
    let path = dir.path().join("args.json");
    std::fs::write(&path, args.to_string()).expect("write args");
    let mut podman = FakePodman::default();
    podman.images.insert("svc:1".into(), "id-1".into());
    let host = Host {
        systemd: &FakeSystemd::default(),
        podman: &podman,
        registry: &FakeRegistry::default(),
        clock: &FakeClock::default(),
        quadlet: &FakeQuadlet::default(),
    };
    let t0 = thread_cpu_seconds();
    let out = respond(&SPEC, &path, |p, inv| run(p, inv, &host));
    let cpu = thread_cpu_seconds() - t0;
    assert_ne!(out["failed"], json!(true), "{}", out["msg"]);
    println!("PLAN units={n} cpu_seconds={cpu:.3}");
}
