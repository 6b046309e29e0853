//! Issue 21: `begin` with the deployment decides in one call. On the simulated host, a run
//! with nothing to do finishes there (stream recorded, lease released, no job); a run with
//! work leaves the lease, the checkpoint and the staged unit for the phases after it; bad
//! units are refused before the state dir exists.

use super::run;
use super::spec::SPEC;
use crate::testing::respond_on;
use crate::testing::sim::SimHost;
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/app:1";

struct Bed {
    dir: tempfile::TempDir,
    sim: SimHost,
}

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = SimHost::new(dir.path().join("quadlet"));
        sim.add_image(IMAGE, "img-a");
        Bed { dir, sim }
    }

    fn respond(&self, spec: &'static crate::ansible::ModuleSpec, args: Value) -> Value {
        let (dir, sim) = (self.dir.path(), &self.sim);
        if spec.name == "flow_state" {
            respond_on(spec, dir, &args, sim, sim, run).out
        } else {
            respond_on(spec, dir, &args, sim, sim, crate::container_unit::run).out
        }
    }

    fn dirs(&self, mut args: Value) -> Value {
        let root = self.dir.path();
        args["quadlet_dir"] = json!(root.join("quadlet"));
        args["systemd_dir"] = json!(root.join("systemd"));
        args["state_dir"] = json!(root.join("state"));
        args
    }

    /// app, running and converged on `env`.
    fn deployed(&self, env: &str) {
        let out = self.respond(
            &crate::container_unit::spec::SPEC,
            self.dirs(json!({"units": [unit(env)], "state": "started", "pull": "missing", "min_healthy_time": 0})),
        );
        assert_eq!(out["failed"], json!(false), "{out}");
        self.sim.calls.lock().expect("calls").clear();
        self.sim.looks.store(0, std::sync::atomic::Ordering::SeqCst);
    }

    fn begin(&self, env: &str) -> Value {
        self.respond(
            &SPEC,
            self.dirs(json!({
                "action": "begin", "flow": "update", "stream": "1.0", "run_id": "r1",
                "image_store": self.dir.path(), "min_free_mb": 1, "pull": "missing",
                "services": ["app"], "units": [unit(env)],
            })),
        )
    }

    fn state(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join("state").join(rel)
    }

    fn jobs(&self) -> Vec<String> {
        let calls = self.sim.calls.lock().expect("calls");
        calls
            .iter()
            .filter(|c| {
                ["start", "stop", "restart"]
                    .iter()
                    .any(|j| c.starts_with(j))
            })
            .cloned()
            .collect()
    }
}

fn unit(env: &str) -> Value {
    json!({"name": "app", "image": IMAGE, "env": {"V": env}})
}

#[test]
fn r21_a_run_with_nothing_to_do_finishes_in_the_first_call() {
    let bed = Bed::new();
    bed.deployed("a");
    let out = bed.begin("a");
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(false), "{out}");
    assert_eq!(out["work"], json!(false), "{out}");
    assert_eq!(out["finished"], json!(true), "{out}");
    assert_eq!(
        out["plan"]["units"][0]["unit"],
        json!("app.container"),
        "{out}"
    );
    let stream = std::fs::read_to_string(bed.state("stream")).expect("stream recorded");
    assert_eq!(stream.trim(), "1.0");
    assert!(!bed.state("flow-lease.json").exists(), "lease released");
    assert!(
        !bed.state("checkpoints/update.json").exists(),
        "checkpoint gone"
    );
    assert_eq!(bed.jobs(), Vec::<String>::new(), "no systemd job");
    assert_eq!(
        bed.sim.looks.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the health check's look at systemd served the plan too"
    );
}

#[test]
fn r21_a_run_with_work_stages_the_unit_and_leaves_the_rest_to_the_phases() {
    let bed = Bed::new();
    bed.deployed("a");
    let running = bed.sim.running("app.service").expect("a runs");
    let out = bed.begin("b");
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["work"], json!(true), "{out}");
    assert_eq!(out["finished"], json!(false), "{out}");
    assert_eq!(out["plan"]["restart_needed"], json!(true), "{out}");
    assert_eq!(
        (out["began"].clone(), out["touched"].clone()),
        (json!(true), json!(true))
    );
    // Issue 35: the new text waits in the stage, the file systemd loads is the old one.
    let text = std::fs::read_to_string(bed.dir.path().join("quadlet/app.container")).expect("unit");
    assert!(text.contains("V=a"), "{text}");
    let staged = std::fs::read_to_string(bed.state("staged/update.json")).expect("staged");
    assert!(staged.contains("V=b"), "{staged}");
    assert!(
        bed.state("flow-lease.json").exists(),
        "lease kept for the phases"
    );
    assert!(
        bed.state("checkpoints/update.json").exists(),
        "checkpoint for recovery"
    );
    assert!(
        !bed.state("stream").exists(),
        "stream recorded only by finish"
    );
    assert_eq!(
        bed.sim.running("app.service"),
        Some(running),
        "nothing restarted"
    );
}

#[test]
fn r21_bad_units_are_refused_by_parameter_before_the_host_is_touched() {
    let bed = Bed::new();
    let mut args = bed.dirs(json!({
        "action": "begin", "flow": "update", "stream": "1.0", "run_id": "r1",
        "image_store": bed.dir.path(), "min_free_mb": 1,
        "units": [{"name": "../x", "image": IMAGE}],
    }));
    let out = bed.respond(&SPEC, args.clone());
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(
        out["msg"].as_str().unwrap_or_default().contains("name"),
        "{out}"
    );
    args["units"] = json!([{"name": "app", "image": IMAGE, "bogus": 1}]);
    let out = bed.respond(&SPEC, args);
    assert!(
        out["msg"].as_str().unwrap_or_default().contains("bogus"),
        "{out}"
    );
    assert!(
        !bed.dir.path().join("state").exists(),
        "state dir untouched"
    );
    assert!(
        bed.sim.calls.lock().expect("calls").is_empty(),
        "no call to the host"
    );
}

impl Bed {
    fn begin_deploy(&self, target: &str, check: bool) -> Value {
        self.respond(
            &SPEC,
            self.dirs(json!({
                "action": "begin", "flow": "deploy", "stream": "1.0", "run_id": "r1",
                "image_store": self.dir.path(), "min_free_mb": 1, "pull": "missing",
                "target": target, "units": [unit("a")], "_ansible_check_mode": check,
            })),
        )
    }
}

#[test]
fn begin_writes_the_deployment_s_target_once_and_check_mode_only_says_so() {
    let bed = Bed::new();
    let path = bed.dir.path().join("systemd/foreman.target");
    let checked = bed.begin_deploy("foreman.target", true);
    assert_eq!(checked["target_written"], json!(true), "{checked}");
    assert!(!path.exists(), "check mode writes nothing");

    let out = bed.begin_deploy("foreman.target", false);
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["target_written"], json!(true), "{out}");
    assert_eq!(out["changed"], json!(true), "{out}");
    let text = std::fs::read_to_string(&path).expect("target written");
    assert_eq!(
        text,
        "[Unit]\nDescription=refit: the services of foreman.target\n"
    );
    assert!(
        bed.sim
            .calls
            .lock()
            .expect("calls")
            .iter()
            .any(|c| c == "daemon-reload"),
        "systemd reloaded, so the units part of it find it"
    );

    let again = bed.begin_deploy("foreman.target", false);
    assert_eq!(again.get("target_written"), None, "{again}");
}

#[test]
fn a_target_that_is_no_target_unit_is_refused_before_the_host_is_touched() {
    for bad in [
        "foreman.service",
        "../x.target",
        "-a.target",
        ".target",
        "a\nb.target",
    ] {
        let bed = Bed::new();
        let out = bed.begin_deploy(bad, false);
        assert_eq!(out["failed"], json!(true), "{bad}: {out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains("target"), "{bad}: {msg}");
        assert!(!bed.state("").exists(), "{bad}: the state dir was touched");
        assert!(!bed.dir.path().join("systemd").exists(), "{bad}");
    }
}

#[test]
fn r35_a_begin_that_fails_with_nothing_touched_releases_its_lease() {
    let bed = Bed::new();
    bed.deployed("a");
    // An image no registry has: the fetch fails after the lease was taken, before any unit
    // is written.
    let args = bed.dirs(json!({
        "action": "begin", "flow": "update", "stream": "1.0", "run_id": "r1",
        "image_store": bed.dir.path(), "min_free_mb": 1, "pull": "missing",
        "services": ["app"],
        "units": [{"name": "app", "image": "127.0.0.1:5000/app:missing"}],
    }));
    let out = bed.respond(&SPEC, args.clone());
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(
        (out["began"].clone(), out["touched"].clone()),
        (json!(true), json!(false)),
        "{out}"
    );
    assert!(!bed.state("flow-lease.json").exists(), "lease released");
    // So the next run, at once, is neither refused as live nor told to wait.
    let again = bed.begin("b");
    assert_eq!(again["failed"], json!(false), "{again}");
    assert_eq!(again["resumed"], json!(false), "{again}");
}

/// A `begin` that fails after it took the lease, in a step that is no unit's (here the finish
/// of a run with nothing to do, whose stop record cannot be removed), still names its run and
/// says it began: the role's recovery needs both to end the run, and the lease goes with the
/// failure when nothing was touched.
#[test]
fn r35_a_begin_that_fails_after_its_lease_names_its_run() {
    let bed = Bed::new();
    bed.deployed("a");
    std::fs::create_dir_all(bed.state("stops/update.json/in-the-way")).expect("mkdir");
    let out = bed.begin("a");
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(
        out["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("stops/update.json"),
        "{out}"
    );
    assert_eq!(
        (
            out["run_id"].clone(),
            out["began"].clone(),
            out["touched"].clone()
        ),
        (json!("r1"), json!(true), json!(false)),
        "{out}"
    );
    assert!(!bed.state("flow-lease.json").exists(), "lease released");
}
