//! A flow's migration on the simulated host, with the units of its image staged beside it:
//! they stop just before it, all at once, and start again once it serves, each with its new
//! text; a unit of another image, or one not restarting, keeps running. And `checks:
//! when_kept`: a unit that restarts anyway migrates without its check command first.

use super::run;
use super::spec::SPEC;
use crate::podman::{ContainerInfo, ContainerState, Health};
use crate::state::{Stage, Staged, StateDir};
use crate::testing::sim::SimHost;
use crate::testing::{FakePodman, respond_on};
use serde_json::{Value, json};

/// app and web (which requires app) on svc:1, side and worker@1..2 on svc:1 too, and other on
/// svc:3; the flow's stage holds new texts on svc:2 for app, side, worker@ and other, while
/// web keeps its text.
struct Bed {
    dir: tempfile::TempDir,
    sim: SimHost,
    podman: FakePodman,
}

const NEW: &str = "[Container]\nImage=svc:2\n";

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = dir.path().join("quadlet");
        let sim = SimHost::with_dependency(q.clone(), "app", "web");
        for name in ["side", "worker@", "other"] {
            std::fs::write(
                q.join(format!("{name}.container")),
                "[Container]\nImage=svc:1\n",
            )
            .expect("write unit");
        }
        let others = [
            "side.service",
            "worker@1.service",
            "worker@2.service",
            "other.service",
        ]
        .map(String::from);
        crate::systemd::Systemd::enqueue(&sim, crate::systemd::Job::Start, &others).expect("start");
        sim.add_image("svc:2", "img-2");
        sim.calls.lock().expect("calls").clear();
        let mut podman = FakePodman {
            calls: sim.calls.clone(),
            ..FakePodman::default()
        };
        podman.images.insert("svc:2".into(), "img-2".into());
        let all = ["app", "web", "side", "worker@1", "worker@2", "other"];
        for unit in all.map(|u| format!("{u}.service")) {
            podman.containers.push(ContainerInfo {
                id: format!("c-{unit}"),
                image_id: "img-2".into(),
                revision: None,
                unit,
                state: ContainerState::Running,
                health: Some(Health::Healthy),
                started_at: 0,
            });
        }
        let staged = |file: &str, text: &str| {
            let s = Staged {
                revision: format!("r-{file}"),
                text: text.into(),
            };
            (file.to_string(), s)
        };
        let stage = Stage {
            units: [
                staged("app.container", NEW),
                staged("side.container", NEW),
                staged("worker@.container", NEW),
                staged("other.container", "[Container]\nImage=svc:3\n"),
            ]
            .into(),
            ..Stage::default()
        };
        StateDir::new(dir.path().join("state"))
            .save_stage("upgrade", &stage)
            .expect("stage");
        Bed { dir, sim, podman }
    }

    fn run(&self, extra: Value) -> Value {
        let mut args = json!({
            "unit": "app", "command": ["migrate"], "check_command": ["check"],
            "stop_first": true, "start_after": true, "stage": "upgrade",
            "images": {"app": "svc:2", "web": "svc:1", "side": "svc:2", "worker@": "svc:2",
                       "other": "svc:3"},
            "instances": {"worker@": [1, "2"]},
            "quadlet_dir": self.sim.quadlet_dir,
            "state_dir": self.dir.path().join("state"),
        });
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        respond_on(&SPEC, self.dir.path(), &args, &self.sim, &self.podman, run).out
    }

    /// What podman says of app's container's health.
    fn app_health(&mut self, health: Health) {
        let app = self
            .podman
            .containers
            .iter_mut()
            .find(|c| c.unit == "app.service")
            .expect("app's container");
        app.health = Some(health);
    }

    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.sim.calls.lock().expect("calls"))
    }

    fn text(&self, file: &str) -> String {
        std::fs::read_to_string(self.sim.quadlet_dir.join(file)).expect("unit file")
    }
}

#[test]
fn the_units_of_the_migrations_image_stop_for_it_and_start_again_after_it() {
    let bed = Bed::new();
    let out = bed.run(json!({"checks": "when_kept"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    let same = ["side.service", "worker@1.service", "worker@2.service"];
    let stopped: Vec<String> = serde_json::from_value(out["stopped"].clone()).expect("list");
    for s in same.iter().chain(&["app.service", "web.service"]) {
        assert!(stopped.iter().any(|x| x == s), "{s} not stopped: {out}");
    }
    assert!(!stopped.iter().any(|x| x == "other.service"), "{out}");
    let calls = bed.calls();
    let at = |what: &str| calls.iter().position(|c| c == what);
    let run = at("run img-2 migrate");
    for s in same {
        assert!(
            at(&format!("stop {s}")) < run,
            "{s} stopped first: {calls:?}"
        );
        assert!(
            run < at(&format!("start {s}")),
            "{s} started after: {calls:?}"
        );
    }
    for file in ["app.container", "side.container", "worker@.container"] {
        assert_eq!(bed.text(file), NEW, "{file} installed before its start");
    }
    assert_eq!(
        bed.text("other.container"),
        "[Container]\nImage=svc:1\n",
        "not installed"
    );
    assert_eq!(bed.sim.active_state("other.service"), "active");
    assert!(
        !calls.iter().any(|c| c.contains("check")),
        "when_kept asks no check: {calls:?}"
    );
}

#[test]
fn checks_always_asks_the_check_command_first_even_when_the_unit_restarts() {
    let bed = Bed::new();
    // The fake's one-offs exit 0: the check says nothing is pending.
    let out = bed.run(json!({"checks": "always"}));
    assert_eq!(out["ran"], json!(false), "{out}");
    let calls = bed.calls();
    assert!(calls.iter().any(|c| c == "run img-2 check"), "{calls:?}");
    assert!(!calls.iter().any(|c| c.starts_with("stop ")), "{calls:?}");
}

#[test]
fn an_instance_that_is_no_unit_name_is_refused_naming_the_parameter() {
    let bed = Bed::new();
    let out = bed.run(json!({"instances": {"worker@": ["a/b"]}}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("instances.worker@"), "{msg}");
    assert!(bed.calls().is_empty());
}

#[test]
fn a_slow_stop_does_not_hold_back_the_other_stops_of_the_image_and_the_migrated_one_serves_on() {
    let mut bed = Bed::new();
    // side never stops: the other stops of its wave are asked for all the same.
    bed.sim.stuck.insert("side.service".into());
    let out = bed.run(json!({"checks": "when_kept", "timeout": 5}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let calls = bed.calls();
    for s in ["worker@1.service", "worker@2.service"] {
        assert!(calls.contains(&format!("stop {s}")), "{s}: {calls:?}");
    }
    // The migration cannot begin: the migrated service and what needs it were never stopped.
    for s in ["web.service", "app.service"] {
        assert!(!calls.contains(&format!("stop {s}")), "{s}: {calls:?}");
        assert_eq!(bed.sim.active_state(s), "active", "{s}");
    }
    assert!(!calls.iter().any(|c| c.starts_with("run ")), "{calls:?}");
}

/// The migrated service and what needs it, and the other units of its image.
const OWN: [&str; 2] = ["app.service", "web.service"];
const SAME_IMAGE: [&str; 3] = ["side.service", "worker@1.service", "worker@2.service"];

/// Asserts that the run asked `job` of every one of `first` before any of `then`.
fn assert_jobs_in_order(calls: &[String], job: &str, first: &[&str], then: &[&str]) {
    let at = |unit: &str| calls.iter().position(|c| *c == format!("{job} {unit}"));
    for f in first {
        for t in then {
            assert!(
                at(f).is_some() && at(f) < at(t),
                "{job} {f}, then {t}: {calls:?}"
            );
        }
    }
}

#[test]
fn the_migrated_service_stops_after_the_others_of_its_image() {
    let bed = Bed::new();
    let out = bed.run(json!({"checks": "when_kept"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_jobs_in_order(&bed.calls(), "stop", &SAME_IMAGE, &OWN);
}

#[test]
fn check_mode_says_an_upgrade_runs_the_migration_without_its_check() {
    let bed = Bed::new();
    let args = json!({"checks": "when_kept", "_ansible_check_mode": true});
    let out = bed.run(args);
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("would run the migration"), "{msg}");
    assert!(!msg.contains("check command"), "{msg}");
    assert!(bed.calls().is_empty(), "check mode touches nothing");
}

#[test]
fn two_migrations_of_one_image_leave_its_other_units_to_the_start_phase() {
    let bed = Bed::new();
    let mut args = json!({
        "migrations": [{"unit": "app", "command": ["migrate"]}, {"unit": "side", "command": ["migrate"]}],
        "stop_first": true, "start_after": true, "stage": "upgrade",
        "images": {"app": "svc:2", "web": "svc:1", "side": "svc:2", "worker@": "svc:2"},
        "instances": {"worker@": "1, 2"},
        "quadlet_dir": bed.sim.quadlet_dir,
        "state_dir": bed.dir.path().join("state"),
    });
    args["checks"] = json!("when_kept");
    let out = respond_on(&SPEC, bed.dir.path(), &args, &bed.sim, &bed.podman, run).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    let calls = bed.calls();
    assert!(
        !calls.iter().any(|c| c.contains("worker@")),
        "no new code between the two migrations: {calls:?}"
    );
    assert_eq!(bed.text("worker@.container"), "[Container]\nImage=svc:1\n");
}

#[test]
fn a_unit_ordered_after_another_migrations_service_waits_for_the_start_phase() {
    let mut bed = Bed::new();
    // side (svc:2, as app) starts after other, which has a migration of its own.
    bed.sim.props.insert(
        "side.service".into(),
        vec![("After", "other.service".into())],
    );
    let mut args = json!({
        "migrations": [{"unit": "app", "command": ["migrate"]}, {"unit": "other", "command": ["migrate"]}],
        "stop_first": true, "start_after": true, "stage": "upgrade", "checks": "when_kept",
        "images": {"app": "svc:2", "web": "svc:1", "side": "svc:2", "other": "svc:3"},
        "quadlet_dir": bed.sim.quadlet_dir,
        "state_dir": bed.dir.path().join("state"),
    });
    args["instances"] = json!({});
    bed.podman.images.insert("svc:3".into(), "img-3".into());
    bed.sim.add_image("svc:3", "img-3");
    let out = respond_on(&SPEC, bed.dir.path(), &args, &bed.sim, &bed.podman, run).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    let stopped = out["migrations"][0]["stopped"].to_string();
    assert!(!stopped.contains("side.service"), "{out}");
}

#[test]
fn check_mode_without_a_stage_sees_the_unit_restart_on_its_new_image() {
    let bed = Bed::new();
    std::fs::remove_dir_all(bed.dir.path().join("state")).expect("no stage");
    let out = bed.run(json!({"checks": "when_kept", "stage": null, "_ansible_check_mode": true}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("would run the migration"), "{msg}");
    let out = bed.run(json!({"checks": "always", "stage": null, "_ansible_check_mode": true}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("would run the check command"), "{msg}");
}

#[test]
fn instances_read_as_container_unit_reads_them_and_a_map_is_refused_by_name() {
    let bed = Bed::new();
    let out = bed.run(json!({"checks": "when_kept", "instances": {"worker@": "1,2"}}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert!(
        out["stopped"].to_string().contains("worker@2.service"),
        "{out}"
    );
    let bed = Bed::new();
    let out = bed.run(json!({"instances": {"worker@": {"a": 1}}}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("instances.worker@"), "{msg}");
    assert!(bed.calls().is_empty());
}

#[test]
fn the_migrated_service_starts_first_and_the_others_of_its_image_once_it_serves() {
    let bed = Bed::new();
    let out = bed.run(json!({"checks": "when_kept"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_jobs_in_order(&bed.calls(), "start", &OWN, &SAME_IMAGE);
}

#[test]
fn the_others_of_its_image_stay_stopped_while_the_migrated_service_does_not_serve() {
    let mut bed = Bed::new();
    bed.app_health(Health::Unhealthy);
    let out = bed.run(json!({"checks": "when_kept"}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("app.service"), "{msg}");
    let calls = bed.calls();
    assert!(
        calls.contains(&"start app.service".to_string()),
        "{calls:?}"
    );
    for then in ["side.service", "worker@1.service", "worker@2.service"] {
        assert!(!calls.contains(&format!("start {then}")), "{calls:?}");
    }
}

#[test]
fn the_others_of_its_image_start_on_a_passing_probe_and_podmans_check_still_judges() {
    let mut bed = Bed::new();
    bed.app_health(Health::Starting);
    bed.podman.health.test = vec!["CMD-SHELL".into(), "true".into()];
    *bed.podman.health.probe_rcs.lock().expect("rcs") = vec![0];
    // podman's own check of app fails after refit's probe passed: app never turns healthy.
    bed.podman.health.recorded_check_fails = true;
    let out = bed.run(json!({"checks": "when_kept", "timeout": 5}));
    let calls = bed.calls();
    for then in SAME_IMAGE {
        assert!(
            calls.contains(&format!("start {then}")),
            "{then} started once app's probe passed: {calls:?}"
        );
    }
    assert_eq!(
        *bed.podman.health.recorded_checks.lock().expect("checks"),
        ["c-app.service"],
        "podman was asked for its check once, in the second wave"
    );
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("app.service"), "{msg}");
}

#[test]
fn a_unit_that_wants_one_of_the_image_stops_and_starts_in_its_wave_and_is_watched() {
    let mut bed = Bed::new();
    // helper wants side (as refit writes `depends_on`): it must stop before side, and not
    // start before app serves, or it would pull side up early.
    bed.sim.props.insert(
        "side.service".into(),
        vec![("WantedBy", "helper.service".into())],
    );
    bed.sim.props.insert(
        "helper.service".into(),
        vec![
            ("Wants", "side.service".into()),
            ("After", "side.service".into()),
        ],
    );
    let helper = ["helper.service".to_string()];
    crate::systemd::Systemd::enqueue(&bed.sim, crate::systemd::Job::Start, &helper).expect("start");
    let mut container = bed.podman.containers[0].clone();
    container.id = "c-helper".into();
    container.unit = "helper.service".into();
    container.health = Some(Health::Unhealthy);
    bed.podman.containers.push(container);
    bed.calls();
    let out = bed.run(json!({"checks": "when_kept"}));
    // helper is unhealthy after its start: watched, so the run fails naming it.
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("helper.service"), "{msg}");
    let calls = bed.calls();
    assert_jobs_in_order(&calls, "stop", &["helper.service"], &OWN);
    assert_jobs_in_order(&calls, "start", &OWN, &["helper.service"]);
}
