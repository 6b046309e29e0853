//! A flow's recovery on the simulated host: every unit goes back to its checkpoint on its own,
//! and a unit systemd is restarting on its own while refit starts it still converges.

use crate::testing::sim::Bed;
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/svc:1";

fn rb(v: &str) -> Value {
    json!({"name": "rb", "image": IMAGE, "env": {"V": v}})
}

/// Seen in a Pulp upgrade's recovery: a worker crashed when its database was restored under
/// it; refit saw it down and planned a start, and by the time the job was queued systemd had
/// begun a restart of its own. The start joined that restart, whose invocation had begun
/// before the job, and refit waited out its whole timeout for another.
#[test]
fn a_start_queued_while_systemd_restarts_the_unit_on_its_own_converges() {
    let bed = Bed::new(IMAGE, "img-a");
    let out = bed.run_unit(rb("a")).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    bed.jobs();
    // The run's first look finds the restart scheduled; the look before the job, under way.
    bed.sim.crash_then_restart_on_its_own("rb.service", 1);
    let ran = bed.run_unit(rb("a"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    assert_eq!(ran.out["actions"], json!(["start"]), "{}", ran.out);
    let calls = bed.sim.calls.lock().expect("calls").clone();
    assert_eq!(
        calls,
        [
            "reset-failed rb.service",
            "own-restart rb.service",
            "stop rb.service",
            "start rb.service"
        ],
        "systemd's restart began before refit's job, which stops it and starts afresh"
    );
    assert!(
        ran.fake_time < std::time::Duration::from_secs(10),
        "{:?}",
        ran.fake_time
    );
}

fn units(v: &str, extra: Value) -> Value {
    let mut args = json!({"units": [
        {"name": "app", "image": IMAGE, "env": {"V": v}, "depends_on": ["db"]},
        {"name": "db", "image": IMAGE, "env": {"V": v}},
    ]});
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    args
}

/// Seen in the same recovery: the worker that failed to go back was rolled back from its
/// checkpoint to the revision before it, and took with it every unit already put back, so
/// the API answered the release before last.
#[test]
fn a_recovery_puts_back_every_unit_it_can_and_never_goes_behind_the_checkpoint() {
    let bed = Bed::new(IMAGE, "img-a");
    for v in ["a", "b"] {
        let out = bed.run_unit(units(v, json!({}))).out;
        assert_eq!(out["failed"], json!(false), "{out}");
    }
    let (db_b, app_b) = (bed.revision("db.service"), bed.revision("app.service"));
    let out = bed
        .run_unit(units("c", json!({"checkpoint": "upgrade"})))
        .out;
    assert_eq!(out["failed"], json!(false), "{out}");
    bed.jobs();
    bed.sim.crash(&db_b);

    let out = bed
        .run_unit(units(
            "c",
            json!({"checkpoint": "upgrade", "state": "rolled_back"}),
        ))
        .out;
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.starts_with("db.service: revision"), "{msg}");
    assert!(
        !msg.contains("Rolled back to"),
        "nothing goes behind the checkpoint: {msg}"
    );
    // db comes first, fails, and app still goes back to its checkpoint's revision.
    assert_eq!(bed.jobs(), ["restart db.service", "restart app.service"]);
    assert_eq!(bed.revision("app.service"), app_b);
}
