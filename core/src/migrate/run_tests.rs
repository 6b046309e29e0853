//! `migrate::run` on the simulated host: a pending migration stops its service and what needs
//! it first, runs once per image and stamps it; a failed one stamps nothing; a check command
//! that reports nothing pending stops and runs nothing. Its container is created before the
//! stop and removed after the start, whatever fails in between (issue 15). systemd's and
//! podman's calls go to one log, in the order they were made. Stops wait on the fake clock.

use super::run;
use super::spec::SPEC;
use crate::podman::{ContainerInfo, ContainerState, Health};
use crate::testing::sim::SimHost;
use crate::testing::{FakePodman, respond_on};
use serde_json::{Value, json};

/// app (on svc:1) and web, which requires it, both running.
struct Bed {
    dir: tempfile::TempDir,
    sim: SimHost,
    podman: FakePodman,
}

impl Bed {
    fn new(rc: i64) -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = SimHost::with_dependency(dir.path().join("quadlet"), "app", "web");
        let mut podman = FakePodman {
            oneoff_rc: rc,
            calls: sim.calls.clone(),
            ..FakePodman::default()
        };
        podman.images.insert("svc:1".into(), "img-1".into());
        // What start_after waits for once it started them: their containers running, healthy.
        for unit in ["app.service", "web.service"] {
            podman.containers.push(ContainerInfo {
                id: format!("c-{unit}"),
                image_id: "img-1".into(),
                revision: None,
                unit: unit.into(),
                state: ContainerState::Running,
                health: Some(Health::Healthy),
                started_at: 0,
            });
        }
        Bed { dir, sim, podman }
    }

    fn run(&self, args: Value) -> Value {
        let mut args = args;
        args["unit"] = json!("app");
        args["command"] = json!(["migrate"]);
        args["quadlet_dir"] = json!(self.sim.quadlet_dir);
        args["state_dir"] = json!(self.dir.path().join("state"));
        respond_on(&SPEC, self.dir.path(), &args, &self.sim, &self.podman, run).out
    }

    /// The jobs and one-off phases since the last look, in order. Every one-off container
    /// prepared was removed by then.
    fn calls(&self) -> Vec<String> {
        let held = self.podman.held.lock().expect("held");
        assert!(held.is_empty(), "left behind: {held:?}");
        std::mem::take(&mut *self.sim.calls.lock().expect("calls"))
    }

    fn recorded_stop(&self) -> Value {
        let path = self.dir.path().join("state/stops/default.json");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

#[test]
fn a_pending_migration_stops_what_needs_it_first_runs_once_and_is_stamped() {
    let bed = Bed::new(0);
    let out = bed.run(json!({"stop_first": true}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["ran"], json!(true), "{out}");
    assert_eq!(
        out["stopped"],
        json!(["web.service", "app.service"]),
        "{out}"
    );
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "reset-failed web.service app.service",
            "stop web.service",
            "stop app.service",
            "run img-1 migrate",
            "output img-1 migrate",
            "remove img-1 migrate"
        ],
        "created while they serve, stopped in reverse dependency order, then migrated on the \
         image by ID"
    );
    assert_eq!(
        bed.recorded_stop()["active_before"],
        json!(["web.service", "app.service"]),
        "recorded, so stop_services restored brings both back"
    );
    assert_eq!(bed.sim.active_state("web.service"), "inactive");

    let again = bed.run(json!({"stop_first": true}));
    assert_eq!(again["changed"], json!(false), "{again}");
    assert_eq!(again["ran"], json!(false), "{again}");
    let why = again["skipped_reason"].as_str().unwrap_or_default();
    assert!(why.contains("already migrated for image img-1"), "{why}");
    assert!(bed.calls().is_empty(), "nothing stopped or run again");
}

#[test]
fn a_failed_migration_stamps_nothing_so_the_next_run_tries_again() {
    let bed = Bed::new(3);
    let out = bed.run(json!({}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rc"], json!(3), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("the migration exited 3; nothing was recorded"),
        "{msg}"
    );
    bed.calls();
    let again = bed.run(json!({}));
    assert_eq!(again["ran"], json!(true), "{again}");
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "run img-1 migrate",
            "output img-1 migrate",
            "remove img-1 migrate"
        ]
    );
}

#[test]
fn a_check_command_that_reports_nothing_pending_stops_and_runs_nothing() {
    let bed = Bed::new(0);
    let out = bed.run(json!({"stop_first": true, "check_command": ["check"]}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(false), "{out}");
    assert_eq!(
        out["skipped_reason"],
        json!("check_command reports nothing pending"),
        "{out}"
    );
    assert_eq!(
        bed.calls(),
        [
            "create img-1 check",
            "run img-1 check",
            "output img-1 check",
            "remove img-1 check"
        ],
        "only the check ran"
    );
    assert_eq!(bed.sim.active_state("app.service"), "active");
}

#[test]
fn a_check_this_run_already_found_pending_for_the_image_is_not_run_again() {
    // The fake's one-offs exit 0, so a check run now would say nothing is pending.
    let bed = Bed::new(0);
    let judged = json!({"check_command": ["check"], "checked_pending": {"app": "img-1"}});
    let out = bed.run(judged);
    assert_eq!(out["ran"], json!(true), "{out}");
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "run img-1 migrate",
            "output img-1 migrate",
            "remove img-1 migrate"
        ],
        "the migration only"
    );

    // Found pending for another image: this one is asked.
    let bed = Bed::new(0);
    let stale = json!({"check_command": ["check"], "checked_pending": {"app": "img-0"}});
    let out = bed.run(stale);
    assert_eq!(out["ran"], json!(false), "{out}");
    assert_eq!(
        bed.calls(),
        [
            "create img-1 check",
            "run img-1 check",
            "output img-1 check",
            "remove img-1 check"
        ]
    );
}

#[test]
fn start_after_starts_what_the_migration_stopped_in_dependency_order_once_it_ran() {
    let bed = Bed::new(0);
    let out = bed.run(json!({"stop_first": true, "start_after": true}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(
        out["started"],
        json!(["app.service", "web.service"]),
        "{out}"
    );
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "reset-failed web.service app.service",
            "stop web.service",
            "stop app.service",
            "run img-1 migrate",
            "start app.service",
            "start web.service",
            "output img-1 migrate",
            "remove img-1 migrate"
        ],
        "down for the migration and the start only: created before the stop, started again \
         before the log is read, removed after the start, all before the call returns"
    );
    assert_eq!(bed.sim.active_state("web.service"), "active");
    assert_eq!(
        bed.recorded_stop()["active_before"],
        json!(["web.service", "app.service"]),
        "the record stays until the flow finishes, for its recovery"
    );
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.ends_with("then started app.service, web.service"),
        "{msg}"
    );
}

#[test]
fn start_after_starts_nothing_when_the_migration_failed() {
    let bed = Bed::new(2);
    let out = bed.run(json!({"stop_first": true, "start_after": true}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out.get("started"), None, "{out}");
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "reset-failed web.service app.service",
            "stop web.service",
            "stop app.service",
            "run img-1 migrate",
            "output img-1 migrate",
            "remove img-1 migrate"
        ],
        "the failed migration's container is removed all the same"
    );
    assert_eq!(bed.sim.active_state("app.service"), "inactive");
}

#[test]
fn start_after_without_stop_first_is_refused_before_the_host_is_touched() {
    let bed = Bed::new(0);
    let out = bed.run(json!({"start_after": true}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("start_after needs stop_first: true"), "{msg}");
    assert!(bed.calls().is_empty(), "nothing stopped or run");
}

#[test]
fn a_restore_stops_the_services_started_after_their_migration_before_the_data_goes_back() {
    let bed = Bed::new(0);
    let backup = json!({
        "image": "svc:1",
        "command": ["dump"],
        "restore_command": ["load"],
    });
    let out = bed.run(json!({"stop_first": true, "start_after": true, "backup": backup}));
    assert_eq!(
        out["started"],
        json!(["app.service", "web.service"]),
        "{out}"
    );
    bed.calls();
    // The flow failed later, before it finished: its recovery restores the backup.
    let restored = bed.run(json!({"restore": true}));
    assert_eq!(restored["failed"], json!(false), "{restored}");
    assert_eq!(
        bed.calls(),
        [
            "stop web.service",
            "stop app.service",
            "create svc:1 load",
            "run svc:1 load",
            "output svc:1 load",
            "remove svc:1 load"
        ],
        "nothing writes while the data goes back"
    );
    assert_eq!(bed.sim.active_state("app.service"), "inactive");
}

#[test]
fn start_after_fails_at_once_on_an_unhealthy_container() {
    let mut bed = Bed::new(0);
    bed.podman.containers[1].health = Some(Health::Unhealthy);
    let out = bed.run(json!({"stop_first": true, "start_after": true}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains(
            "web.service was started again after its migration, but its container is unhealthy"
        ),
        "{msg}"
    );
    let calls = bed.calls();
    assert_eq!(
        calls.last().map(String::as_str),
        Some("remove img-1 migrate"),
        "removed after the start that failed: {calls:?}"
    );
}

#[test]
fn start_after_probes_a_starting_container_and_serves_once_its_own_check_passes() {
    let mut bed = Bed::new(0);
    for c in &mut bed.podman.containers {
        c.health = Some(Health::Starting);
    }
    bed.podman.health.test = vec!["CMD-SHELL".into(), "ready".into()];
    // Not ready at the first probe of each, ready after.
    *bed.podman.health.probe_rcs.lock().expect("rcs") = vec![1, 1, 0];
    let out = bed.run(json!({"stop_first": true, "start_after": true, "timeout": 30}));
    assert_eq!(out["failed"], json!(false), "{out}");
    let checked = bed
        .podman
        .health
        .recorded_checks
        .lock()
        .expect("checks")
        .clone();
    assert_eq!(
        checked.len(),
        2,
        "one recorded check per container: {checked:?}"
    );
    assert!(
        bed.podman.health.probed() >= 3,
        "{}",
        bed.podman.health.probed()
    );
    bed.calls();
}

#[test]
fn a_backup_is_created_with_the_migration_and_runs_after_the_stop_before_it() {
    let bed = Bed::new(0);
    let backup = json!({"image": "svc:1", "command": ["dump"], "restore_command": ["load"]});
    let out = bed.run(json!({"stop_first": true, "start_after": true, "backup": backup}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(
        bed.calls(),
        [
            "create img-1 migrate",
            "create svc:1 dump",
            "reset-failed web.service app.service",
            "stop web.service",
            "stop app.service",
            "run svc:1 dump",
            "remove svc:1 dump",
            "run img-1 migrate",
            "start app.service",
            "start web.service",
            "output img-1 migrate",
            "remove img-1 migrate"
        ]
    );
}

#[test]
fn a_create_that_fails_stops_nothing() {
    let mut bed = Bed::new(0);
    bed.podman.oneoff_create_fails = true;
    let out = bed.run(json!({"stop_first": true, "start_after": true}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("container create"), "{msg}");
    assert_eq!(bed.calls(), ["create img-1 migrate"]);
    assert_eq!(bed.sim.active_state("app.service"), "active");
    assert_eq!(bed.sim.active_state("web.service"), "active");
}

#[test]
fn a_stop_that_fails_after_the_create_still_removes_the_container() {
    let mut bed = Bed::new(0);
    bed.sim.stuck.insert("web.service".into());
    let out = bed.run(json!({"stop_first": true, "start_after": true, "timeout": 5}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let calls = bed.calls();
    assert_eq!(
        calls.first().map(String::as_str),
        Some("create img-1 migrate")
    );
    assert_eq!(
        calls.last().map(String::as_str),
        Some("remove img-1 migrate")
    );
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("run ") || c.starts_with("start ")),
        "neither migrated nor started: {calls:?}"
    );
}

#[test]
fn a_stop_that_fails_leaves_no_backup_container_and_no_backup_directory() {
    let mut bed = Bed::new(0);
    bed.sim.stuck.insert("web.service".into());
    let backup = json!({"image": "svc:1", "command": ["dump"], "restore_command": ["load"]});
    let out =
        bed.run(json!({"stop_first": true, "start_after": true, "timeout": 5, "backup": backup}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let calls = bed.calls();
    assert!(
        calls.contains(&"create svc:1 dump".to_string()),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"remove svc:1 dump".to_string()),
        "{calls:?}"
    );
    assert!(!calls.contains(&"run svc:1 dump".to_string()), "{calls:?}");
    // The stream's directory stays; the backup's own, made for it, went with its container.
    let stream = bed.dir.path().join("state/backups/default");
    let left: Vec<_> = std::fs::read_dir(&stream)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", stream.display());
}

/// Migrations of app and web in one call, each container waiting (2 s at most) for the other to
/// run beside it; the most that ran at once, and the result.
fn both_at_once(bed: &mut Bed) -> (usize, Value) {
    bed.podman.oneoffs_meet.at = 2;
    let args = json!({
        "migrations": [{"unit": "app", "command": ["migrate"]}, {"unit": "web", "command": ["migrate"]}],
        "stop_first": true, "start_after": true,
        "quadlet_dir": bed.sim.quadlet_dir, "state_dir": bed.dir.path().join("state"),
    });
    let out = respond_on(&SPEC, bed.dir.path(), &args, &bed.sim, &bed.podman, run).out;
    let most = bed
        .podman
        .oneoffs_meet
        .most
        .load(std::sync::atomic::Ordering::SeqCst);
    (most, out)
}

/// Issue 43: web requires app, so app's stop stops web too: web's migration waits for app's.
#[test]
fn dependent_migrations_run_in_turn() {
    let mut bed = Bed::new(0);
    let (most, out) = both_at_once(&mut bed);
    assert_eq!(out["ran"], json!(2), "{out}");
    assert_eq!(most, 1, "{out}");
}

/// Issue 43: two services that know nothing of each other migrate at once, and each is stopped
/// and started again for its own migration alone.
#[test]
fn independent_migrations_run_at_once() {
    let mut bed = Bed::new(0);
    bed.sim.props.clear();
    let (most, out) = both_at_once(&mut bed);
    assert_eq!(out["ran"], json!(2), "{out}");
    assert_eq!(most, 2, "{out}");
    for (i, svc) in ["app.service", "web.service"].iter().enumerate() {
        assert_eq!(out["migrations"][i]["stopped"], json!([svc]), "{out}");
        assert_eq!(out["migrations"][i]["started"], json!([svc]), "{out}");
    }
    let stopped = &bed.recorded_stop()["active_before"];
    assert_eq!(stopped.as_array().map(Vec::len), Some(2), "{stopped}");
}

/// Issue 43: independent migrations stop their services at the same time, not one after the
/// other: each records its stop first, one at a time, and then neither waits for the other's
/// stop. The stops wait for each other (at most 2 s), and both must have been under way at once.
#[test]
fn independent_migrations_stop_at_the_same_time_and_both_are_recorded() {
    let mut bed = Bed::new(0);
    bed.sim.props.clear();
    bed.sim.stops_meet.at = 2;
    let (_, out) = both_at_once(&mut bed);
    assert_eq!(out["ran"], json!(2), "{out}");
    let most = bed
        .sim
        .stops_meet
        .most
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(most, 2, "the stops ran one after the other: {out}");
    let mut stopped: Vec<String> =
        serde_json::from_value(bed.recorded_stop()["active_before"].clone()).expect("record");
    stopped.sort();
    assert_eq!(stopped, ["app.service", "web.service"], "{out}");
}
