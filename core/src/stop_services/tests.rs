//! `stop_services::run` on the simulated host: what stops and in which order, what the record
//! holds, what `restored` brings back, and the deadline, all on the fake clock.

use super::spec::SPEC;
use super::{Host, run};
use crate::ansible::driver::respond;
use crate::testing::FakeClock;
use crate::testing::sim::SimHost;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// db, and app that requires it and starts after it, both running.
struct Bed {
    dir: tempfile::TempDir,
    sim: SimHost,
    clock: FakeClock,
}

impl Bed {
    fn new(stuck: &[&str]) -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sim = SimHost::with_dependency(dir.path().join("quadlet"), "db", "app");
        sim.stuck = stuck.iter().map(|s| s.to_string()).collect();
        Bed {
            dir,
            sim,
            clock: FakeClock::default(),
        }
    }

    fn run(&self, args: Value) -> Value {
        let mut args = args;
        args["state_dir"] = json!(self.dir.path().join("state"));
        let path = self.dir.path().join("args.json");
        std::fs::write(&path, args.to_string()).expect("write args");
        let host = Host {
            systemd: &self.sim,
            clock: &self.clock,
        };
        respond(&SPEC, &path, |p, inv| run(p, inv, &host))
    }

    /// Stops db with its dependents, which must be app then db.
    fn stop_db_and_its_dependents(&self) {
        let out = self.run(json!({"services": ["db"], "dependents": true}));
        assert_eq!(out["failed"], json!(false), "{out}");
        assert_eq!(
            out["stopped"],
            json!(["app.service", "db.service"]),
            "{out}"
        );
    }

    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.sim.calls.lock().expect("calls"))
    }

    fn record(&self) -> Option<Value> {
        let path = self.dir.path().join("state/stops/default.json");
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }
}

#[test]
fn dependents_stop_first_and_restored_brings_back_exactly_what_ran_in_start_order() {
    let bed = Bed::new(&[]);
    bed.stop_db_and_its_dependents();
    assert_eq!(
        bed.calls(),
        [
            "reset-failed app.service db.service",
            "stop app.service",
            "stop db.service"
        ],
        "their start limit cleared while they still serve, for the start that brings them back"
    );
    let record = bed.record().expect("a stop record");
    assert_eq!(
        record["active_before"],
        json!(["app.service", "db.service"])
    );
    assert_eq!(bed.sim.active_state("db.service"), "inactive");

    let out = bed.run(json!({"state": "restored"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(
        out["started"],
        json!(["db.service", "app.service"]),
        "{out}"
    );
    assert_eq!(
        bed.calls(),
        [
            "reset-failed db.service app.service",
            "start db.service",
            "start app.service"
        ],
        "each start counts against the unit's start limit: one reset-failed clears it for all"
    );
    assert!(bed.record().is_none(), "the record goes once restored");
    assert_eq!(bed.sim.active_state("app.service"), "active");

    let out = bed.run(json!({"state": "restored"}));
    assert_eq!(out["changed"], json!(false), "{out}");
    assert!(bed.calls().is_empty(), "nothing recorded, nothing started");
}

#[test]
fn an_active_dependent_is_refused_before_anything_stops() {
    let bed = Bed::new(&[]);
    let out = bed.run(json!({"services": ["db"]}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("app.service would be stopped too"), "{msg}");
    assert!(bed.calls().is_empty());
    assert!(bed.record().is_none());
}

/// app wants db (refit's `depends_on`) instead of requiring it, and multi-user.target wants db
/// for the boot: with `dependents`, app stops before db, since its next start would start db
/// again; the target stays. Without, app is no reason to refuse: systemd leaves it running.
#[test]
fn what_wants_a_unit_stops_first_with_dependents_and_no_target_does() {
    let wanting = |bed: &mut Bed| {
        bed.sim.props.insert(
            "db.service".into(),
            vec![("WantedBy", "multi-user.target app.service".into())],
        );
        bed.sim.props.insert(
            "app.service".into(),
            vec![
                ("Wants", "db.service".into()),
                ("After", "db.service".into()),
            ],
        );
    };
    let mut bed = Bed::new(&[]);
    wanting(&mut bed);
    bed.stop_db_and_its_dependents();
    assert!(
        !bed.calls().iter().any(|c| c.contains("multi-user.target")),
        "the boot's target is never stopped"
    );
    let record = bed.record().expect("a stop record");
    assert_eq!(
        record["active_before"],
        json!(["app.service", "db.service"])
    );

    let mut bed = Bed::new(&[]);
    wanting(&mut bed);
    let out = bed.run(json!({"services": ["db"]}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["stopped"], json!(["db.service"]), "{out}");
    assert_eq!(bed.sim.active_state("app.service"), "active");
}

#[test]
fn check_mode_says_what_would_stop_and_stops_nothing() {
    let bed = Bed::new(&[]);
    let out = bed.run(json!({"services": ["db"], "dependents": true, "_ansible_check_mode": true}));
    assert_eq!(out["changed"], json!(true), "{out}");
    assert_eq!(
        out["stopped"],
        json!(["app.service", "db.service"]),
        "{out}"
    );
    assert!(bed.calls().is_empty());
    assert!(bed.record().is_none());
}

#[test]
fn a_stop_that_never_ends_fails_at_the_deadline_on_the_fake_clock() {
    let bed = Bed::new(&["app.service"]);
    let (real, fake) = (Instant::now(), bed.clock_now());
    let out = bed.run(json!({"services": ["db"], "dependents": true, "timeout": 90}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("still not stopped after 90 s: app.service"),
        "{msg}"
    );
    assert_eq!(
        bed.calls(),
        ["reset-failed app.service db.service", "stop app.service"],
        "db waits for app"
    );
    assert!(bed.clock_now() - fake >= Duration::from_secs(90));
    assert!(real.elapsed() < Duration::from_secs(5), "no real sleeps");
    // The record was written before the stop: a restore still brings app back.
    let record = bed.record().expect("record");
    assert_eq!(
        record["active_before"],
        json!(["app.service", "db.service"])
    );
}

impl Bed {
    fn clock_now(&self) -> Instant {
        crate::time::Clock::now(&self.clock)
    }
}

#[test]
fn a_service_and_its_socket_side_by_side_are_one_job_every_other_unit_its_own() {
    let units: Vec<String> = [
        "api.service",
        "api.socket",
        "db.service",
        "web.socket",
        "web.service",
        "app.socket",
        "other.service",
    ]
    .map(String::from)
    .to_vec();
    let steps: Vec<Vec<&str>> = super::engine::steps(&units)
        .iter()
        .map(|s| s.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        steps,
        [
            vec!["api.service", "api.socket"],
            vec!["db.service"],
            vec!["web.socket", "web.service"],
            vec!["app.socket"],
            vec!["other.service"],
        ]
    );
}
