//! Carrying out plans on the simulated host: a `units` run in dependency order, template
//! instances in health-gated batches of `max_parallel`, a canary, and a failure that rolls back
//! every unit the run changed. Waits run on the fake clock.

use crate::testing::sim::Bed;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const IMAGE: &str = "127.0.0.1:5000/svc:1";

impl Bed {
    /// The revision the unit `args` describe would have, from a check-mode run.
    fn revision_for(&self, args: Value) -> String {
        let mut args = args;
        args["_ansible_check_mode"] = json!(true);
        let out = self.run_unit(args).out;
        let rev = out["revision"]["after"]
            .as_str()
            .expect("revision")
            .to_string();
        self.jobs();
        rev
    }
}

fn units(v: &str) -> Value {
    json!({"units": [
        {"name": "app", "image": IMAGE, "env": {"V": v}, "depends_on": ["db"]},
        {"name": "db", "image": IMAGE, "env": {"V": v}},
    ]})
}

#[test]
fn a_units_run_starts_dependencies_first_and_a_failure_rolls_back_what_it_changed() {
    let bed = Bed::new(IMAGE, "img-a");
    let real = Instant::now();
    let mut first = units("a");
    first["min_healthy_time"] = json!(15_000);
    let ran = bed.run_unit(first);
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    let jobs = bed.jobs();
    let pos = |s: &str| jobs.iter().position(|j| j.ends_with(s)).expect(s);
    assert!(pos("db.service") < pos("app.service"), "{jobs:?}");
    // Each of the two waited min_healthy_time on the fake clock; a real wait would take 30 s,
    // and the bound leaves a loaded machine room.
    assert!(
        ran.fake_time >= Duration::from_secs(30),
        "{:?}",
        ran.fake_time
    );
    assert!(real.elapsed() < Duration::from_secs(15), "no real sleeps");
    let (db_a, app_a) = (bed.revision("db.service"), bed.revision("app.service"));

    // b: db converges, then app's b crashes; app goes back, and so does db, changed before it.
    let app_b = bed.revision_for(
        json!({"name": "app", "image": IMAGE, "env": {"V": "b"}, "depends_on": ["db"]}),
    );
    bed.sim.crash(&app_b);
    let ran = bed.run_unit(units("b"));
    assert_eq!(ran.out["failed"], json!(true), "{}", ran.out);
    assert_eq!(ran.out["rolled_back"], json!(true), "{}", ran.out);
    let msg = ran.out["msg"].as_str().unwrap_or_default();
    assert!(msg.starts_with("app.service: revision"), "{msg}");
    assert!(
        msg.contains("Units this run had already changed are rolled back too:\n- db.container: Rolled back to revision"),
        "{msg}"
    );
    assert_eq!(bed.revision("db.service"), db_a);
    assert_eq!(bed.revision("app.service"), app_a);
    let rolled: Vec<&Value> = ran.out["units"]
        .as_array()
        .expect("units")
        .iter()
        .filter(|u| u["rolled_back"] == json!(true))
        .collect();
    assert_eq!(rolled.len(), 2, "{}", ran.out);
}

/// `args` with a hold of `ms` on the fake clock, a deadline past it, and db and app free to
/// run at once.
fn held(mut args: Value, ms: u64) -> Value {
    args["min_healthy_time"] = json!(ms);
    args["timeout"] = json!(7_200);
    args["max_parallel_units"] = json!(2);
    args
}

#[test]
fn a_dependent_starts_once_what_it_depends_on_serves_while_that_one_holds() {
    let bed = Bed::new(IMAGE, "img-a");
    // How many looks systemd had been asked as each container started: db's, then app's.
    let looks_at_start = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = looks_at_start.clone();
    bed.sim.crash_while(move |sim| {
        let looks = sim.looks.load(std::sync::atomic::Ordering::SeqCst);
        seen.lock().expect("looks").push(looks);
        false
    });
    // An hour's hold on the fake clock is some 36,000 looks at db: app, started only after it,
    // would start past them.
    let ran = bed.run_unit(held(units("a"), 3_600_000));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    let starts = looks_at_start.lock().expect("looks").clone();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert!(
        starts[1] < 18_000,
        "app started after {} looks: {starts:?}",
        starts[1]
    );
    let jobs = bed.jobs();
    let pos = |s: &str| jobs.iter().position(|j| j.ends_with(s)).expect(s);
    assert!(pos("db.service") < pos("app.service"), "{jobs:?}");
}

#[test]
fn a_hold_that_fails_after_its_dependent_started_rolls_back_both_and_names_its_own_unit() {
    let bed = Bed::new(IMAGE, "img-a");
    let ran = bed.run_unit(units("a"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    let (db_a, app_a) = (bed.revision("db.service"), bed.revision("app.service"));
    // b: db serves and releases app; as app's container starts, db's goes down under its hold
    // and systemd restarts it on its own.
    let starts = std::sync::atomic::AtomicUsize::new(0);
    bed.sim.crash_while(move |sim| {
        if starts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            sim.crash_then_restart_on_its_own("db.service", 0);
        }
        false
    });
    let ran = bed.run_unit(held(units("b"), 600_000));
    assert_eq!(ran.out["failed"], json!(true), "{}", ran.out);
    let msg = ran.out["msg"].as_str().unwrap_or_default();
    assert!(msg.starts_with("db.service: revision"), "{msg}");
    assert!(msg.contains("crash-looping"), "{msg}");
    assert_eq!(bed.revision("db.service"), db_a);
    assert_eq!(bed.revision("app.service"), app_a);
    let jobs = bed.jobs();
    assert!(
        jobs.iter().any(|j| j.ends_with("app.service")),
        "app started: {jobs:?}"
    );
}

fn workers(v: &str, extra: Value) -> Value {
    let mut args =
        json!({"name": "w@", "image": IMAGE, "env": {"V": v}, "instances": ["1", "2", "3"]});
    for (k, x) in extra.as_object().expect("object") {
        args[k] = x.clone();
    }
    args
}

#[test]
fn instances_go_in_batches_of_max_parallel_and_a_failed_batch_stops_the_rollout() {
    let bed = Bed::new(IMAGE, "img-a");
    let ran = bed.run_unit(workers("a", json!({"max_parallel": 2})));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    // Two batches, each healthy for min_healthy_time before the next.
    assert!(
        ran.fake_time >= Duration::from_secs(2),
        "{:?}",
        ran.fake_time
    );
    let a = bed.revision("w@1.service");
    bed.jobs();

    let b = bed.revision_for(workers("b", json!({})));
    bed.sim.crash(&b);
    let ran = bed.run_unit(workers("b", json!({"max_parallel": 2})));
    assert_eq!(ran.out["failed"], json!(true), "{}", ran.out);
    let jobs = bed.jobs();
    assert!(
        jobs.iter()
            .any(|j| j.starts_with("restart w@2") || j.starts_with("start w@2")),
        "the second instance is in the first batch: {jobs:?}"
    );
    assert!(
        !jobs.iter().any(|j| j.contains("w@3")),
        "the third instance is never touched: {jobs:?}"
    );
    for w in ["w@1.service", "w@2.service", "w@3.service"] {
        assert_eq!(bed.revision(w), a, "{w} runs a");
    }
}

#[test]
fn a_canary_replaces_that_many_instances_and_holds_the_rest() {
    let bed = Bed::new(IMAGE, "img-a");
    assert_eq!(
        bed.run_unit(workers("a", json!({}))).out["failed"],
        json!(false)
    );
    let a = bed.revision("w@1.service");
    bed.jobs();
    let ran = bed.run_unit(workers("b", json!({"canary": 1})));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    assert_eq!(
        ran.out["held"],
        json!(["w@2.service", "w@3.service"]),
        "{}",
        ran.out
    );
    assert_ne!(bed.revision("w@1.service"), a);
    assert_eq!(bed.revision("w@2.service"), a);
    assert_eq!(bed.revision("w@3.service"), a);
    assert!(
        bed.jobs().iter().all(|j| j.ends_with("w@1.service")),
        "only the canary got a job"
    );
}

/// Two instance files of one name, each with its own text, as foremanctl writes
/// `foreman-recurring@daily.container`: no template exists.
fn reports(daily: &str, weekly: &str) -> Value {
    json!({"units": [
        {"name": "report@daily", "image": IMAGE, "exec": format!("run {daily}")},
        {"name": "report@weekly.container", "image": IMAGE, "exec": format!("run {weekly}")},
    ]})
}

#[test]
fn instance_files_converge_restart_and_roll_back_alone() {
    let bed = Bed::new(IMAGE, "img-a");
    let ran = bed.run_unit(reports("a", "a"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    let weekly = bed.revision("report@weekly.service");
    let text = |f: &str| std::fs::read_to_string(bed.dir.path().join("quadlet").join(f));
    assert!(
        text("report@daily.container")
            .expect("written")
            .contains("Exec=run a")
    );
    assert!(
        text("report@.container").is_err(),
        "no template was written"
    );
    bed.jobs();

    // Only daily's text changes: only daily restarts.
    let ran = bed.run_unit(reports("b", "a"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    assert_eq!(bed.jobs(), ["restart report@daily.service"]);
    let daily_b = bed.revision("report@daily.service");
    assert_eq!(bed.revision("report@weekly.service"), weekly);

    // Daily's next revision crashes: daily goes back to b, weekly is never touched.
    let daily_c =
        bed.revision_for(json!({"name": "report@daily", "image": IMAGE, "exec": "run c"}));
    bed.sim.crash(&daily_c);
    let ran = bed.run_unit(reports("c", "a"));
    assert_eq!(ran.out["rolled_back"], json!(true), "{}", ran.out);
    assert_eq!(bed.revision("report@daily.service"), daily_b);
    assert_eq!(bed.revision("report@weekly.service"), weekly);
    assert!(
        bed.jobs().iter().all(|j| !j.contains("weekly")),
        "weekly was restarted"
    );
}

#[test]
fn an_instance_file_and_the_same_template_instance_are_refused() {
    let bed = Bed::new(IMAGE, "img-a");
    let ran = bed.run_unit(json!({"units": [
        {"name": "report@", "image": IMAGE, "instances": ["daily"]},
        {"name": "report@daily", "image": IMAGE},
    ]}));
    let msg = ran.out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("report@daily.container appears twice"),
        "{msg}"
    );
    assert!(
        !bed.dir.path().join("quadlet").exists(),
        "nothing was written"
    );
}

#[test]
fn a_changed_drop_in_restarts_only_its_unit_once() {
    let bed = Bed::new(IMAGE, "img-a");
    let two = || {
        json!({"units": [
            {"name": "app", "image": IMAGE},
            {"name": "db", "image": IMAGE},
        ]})
    };
    assert_eq!(bed.run_unit(two()).out["failed"], json!(false));
    bed.jobs();
    let db = bed.revision("db.service");
    let dropins = bed.dir.path().join("quadlet/app.container.d");
    std::fs::create_dir_all(&dropins).expect("mkdir");
    std::fs::write(
        dropins.join("10-limits.conf"),
        "[Container]\nPidsLimit=100\n",
    )
    .expect("w");
    let ran = bed.run_unit(two());
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    assert_eq!(bed.jobs(), ["restart app.service"]);
    assert_eq!(bed.revision("db.service"), db);
    // The drop-in unchanged, nothing restarts again.
    let ran = bed.run_unit(two());
    assert_eq!(ran.out["changed"], json!(false), "{}", ran.out);
    assert!(bed.jobs().is_empty());
}

#[test]
fn a_hand_edit_that_keeps_the_label_line_is_drift() {
    let bed = Bed::new(IMAGE, "img-a");
    let one = || json!({"name": "app", "image": IMAGE});
    assert_eq!(bed.run_unit(one()).out["failed"], json!(false));
    bed.jobs();
    let path = bed.dir.path().join("quadlet/app.container");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains("io.refit.revision="), "{text}");
    std::fs::write(
        &path,
        text.replace("[Container]\n", "[Container]\nEnvironment=HAND_EDIT=1\n"),
    )
    .expect("w");
    let ran = bed.run_unit(one());
    assert_eq!(ran.out["changed"], json!(true), "{}", ran.out);
    assert!(ran.out.to_string().contains("drift"), "{}", ran.out);
    let after = std::fs::read_to_string(&path).expect("read");
    assert!(!after.contains("HAND_EDIT"), "{after}");
}
