//! Issue 35: no new unit text can start before its time. An upgrade of `db` (no migration) and
//! `app` (a migration) runs phase by phase on the simulated host, where a started service runs
//! the text its file on disk names; after each phase every service is restarted, as a boot
//! would, and must run the text that fits its data: the old one before its migration, the new
//! one after, every other unit's new text only once the start phase installed it.

use super::run;
use super::spec::SPEC;
use crate::podman::{ContainerInfo, ContainerState, Health};
use crate::systemd::{Job, Systemd};
use crate::testing::sim::SimHost;
use crate::testing::{FakePodman, respond_on};
use serde_json::{Value, json};

const OLD: [(&str, &str); 2] = [("db", "db:1"), ("app", "app:1")];
const NEW: [(&str, &str); 2] = [("db", "db:2"), ("app", "app:2")];

struct Bed {
    dir: tempfile::TempDir,
    sim: SimHost,
    /// The migration's one-offs; its services' containers, for start_after's wait, run.
    podman: FakePodman,
}

fn units(images: [(&str, &str); 2], schema: &str) -> Value {
    images
        .iter()
        .map(|(name, image)| json!({"name": name, "image": image, "env": {"SCHEMA": schema}}))
        .collect()
}

impl Bed {
    /// db and app deployed on their old images.
    fn deployed() -> Bed {
        let bed = Bed::new();
        let out = bed.units("started", units(OLD, "1"), json!({}));
        assert_eq!(out["failed"], json!(false), "{out}");
        // Stream 1.0 is the one a deploy recorded: the upgrade goes from there.
        std::fs::write(bed.dir.path().join("state/stream"), "1.0\n").expect("stream");
        bed
    }

    /// A host with the images and no unit.
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = SimHost::new(dir.path().join("quadlet"));
        let mut podman = FakePodman {
            calls: sim.calls.clone(),
            ..FakePodman::default()
        };
        for (image, id) in [
            ("db:1", "d1"),
            ("app:1", "a1"),
            ("db:2", "d2"),
            ("app:2", "a2"),
        ] {
            sim.add_image(image, id);
            podman.images.insert(image.into(), id.into());
        }
        podman.containers.push(ContainerInfo {
            id: "c-app".into(),
            image_id: "a2".into(),
            revision: None,
            unit: "app.service".into(),
            state: ContainerState::Running,
            health: Some(Health::Healthy),
            started_at: 0,
        });
        Bed { dir, sim, podman }
    }

    fn dirs(&self, mut args: Value) -> Value {
        let root = self.dir.path();
        args["quadlet_dir"] = json!(root.join("quadlet"));
        args["systemd_dir"] = json!(root.join("systemd"));
        args["state_dir"] = json!(root.join("state"));
        args
    }

    fn units(&self, state: &str, units: Value, extra: Value) -> Value {
        let mut args = self.dirs(
            json!({"units": units, "state": state, "pull": "missing", "min_healthy_time": 0}),
        );
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        let (dir, sim) = (self.dir.path(), &self.sim);
        respond_on(
            &crate::container_unit::spec::SPEC,
            dir,
            &args,
            sim,
            sim,
            crate::container_unit::run,
        )
        .out
    }

    fn flow(&self, args: Value) -> Value {
        let (dir, sim) = (self.dir.path(), &self.sim);
        respond_on(&SPEC, dir, &self.dirs(args), sim, sim, run).out
    }

    fn begin(&self) -> Value {
        self.begin_flow("upgrade", "1.1")
    }

    fn begin_flow(&self, flow: &str, stream: &str) -> Value {
        self.flow(json!({
            "action": "begin", "flow": flow, "stream": stream, "run_id": "r1",
            "image_store": self.dir.path(), "min_free_mb": 1, "pull": "missing",
            "units": units(NEW, "2"), "migrations": [{"unit": "app", "command": ["migrate"]}],
        }))
    }

    /// The migrate phase, as roles/flow/tasks/migrate.yml calls it.
    fn migrate(&self) -> Value {
        self.migrate_flow("upgrade")
    }

    fn migrate_flow(&self, flow: &str) -> Value {
        let root = self.dir.path();
        let args = json!({
            "migrations": [{"unit": "app", "command": ["migrate"]}],
            "images": {"db": "db:2", "app": "app:2"},
            "stop_first": true, "start_after": true, "min_healthy_time": 0,
            "stop_record": flow, "stage": flow,
            "quadlet_dir": root.join("quadlet"), "state_dir": root.join("state"),
        });
        let (dir, sim, podman) = (self.dir.path(), &self.sim, &self.podman);
        respond_on(
            &crate::migrate::spec::SPEC,
            dir,
            &args,
            sim,
            podman,
            crate::migrate::run,
        )
        .out
    }

    /// Every service restarted, as a boot starts them: the images they then run.
    fn boot(&self) -> Vec<String> {
        ["db.service", "app.service"]
            .iter()
            .map(|svc| {
                self.sim
                    .enqueue(Job::Restart, &[svc.to_string()])
                    .expect("restart");
                self.sim
                    .running(svc)
                    .map(|r| r.image_id)
                    .unwrap_or_default()
            })
            .collect()
    }

    fn quadlet(&self, unit: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("quadlet").join(unit)).expect("unit file")
    }

    fn stage(&self) -> std::path::PathBuf {
        self.dir.path().join("state/staged/upgrade.json")
    }

    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.sim.calls.lock().expect("calls"))
    }

    /// The systemd jobs and reloads since the last look.
    fn jobs(&self) -> Vec<String> {
        let jobs = ["start ", "stop ", "restart ", "daemon-reload"];
        self.calls()
            .into_iter()
            .filter(|c| jobs.iter().any(|j| c.starts_with(j)))
            .collect()
    }
}

#[test]
fn r35_a_boot_at_any_phase_starts_the_text_that_fits_the_data() {
    let bed = Bed::deployed();
    let before = (bed.quadlet("db.container"), bed.quadlet("app.container"));
    bed.calls();

    let out = bed.begin();
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(true), "{out}");
    let staged: Vec<Value> = out["plan"]["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| json!([u["unit"], u["staged"], u["actions"]]))
        .collect();
    assert_eq!(
        staged,
        [
            json!(["db.container", true, ["stage_unit"]]),
            json!(["app.container", true, ["stage_unit"]])
        ],
        "{out}"
    );
    let calls = bed.calls();
    assert!(
        !calls.iter().any(|c| c == "daemon-reload"),
        "nothing for systemd to load: {calls:?}"
    );
    assert_eq!(
        (bed.quadlet("db.container"), bed.quadlet("app.container")),
        before,
        "the preflight wrote no unit file"
    );
    let stage = std::fs::read_to_string(bed.stage()).expect("staged");
    assert!(
        stage.contains("Image=app:2") && stage.contains("Image=db:2"),
        "{stage}"
    );
    assert_eq!(bed.boot(), ["d1", "a1"], "after the fetch: all old");

    let out = bed.migrate();
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["migrations"][0]["installed"], json!(true), "{out}");
    let oneoff = bed.podman.oneoffs.lock().expect("oneoffs")[0].clone();
    assert!(
        oneoff.env.contains(&"SCHEMA=2".to_string()),
        "the migration ran with the staged text's env: {oneoff:?}"
    );
    let calls = bed.calls();
    let at = |c: &str| calls.iter().position(|x| x == c).unwrap_or(usize::MAX);
    assert!(
        at("run a2 migrate") < at("daemon-reload") && at("daemon-reload") < at("start app.service"),
        "installed after the migration, before the start: {calls:?}"
    );
    assert!(bed.quadlet("app.container").contains("Image=app:2"));
    assert!(bed.quadlet("db.container").contains("Image=db:1"));
    assert_eq!(
        bed.boot(),
        ["d1", "a2"],
        "after the migration: app new, db old"
    );

    // A status look (check mode) does not take the staged, uninstalled db for a hand edit.
    let status = bed.units(
        "present",
        units(NEW, "2"),
        json!({"_ansible_check_mode": true}),
    );
    let reasons: Vec<&Value> = status["units"]
        .as_array()
        .expect("units")
        .iter()
        .map(|u| &u["reasons"])
        .collect();
    assert!(!json!(reasons).to_string().contains("drift"), "{status}");

    let out = bed.units("started", units(NEW, "2"), json!({}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert!(bed.quadlet("db.container").contains("Image=db:2"));
    assert_eq!(bed.boot(), ["d2", "a2"], "after the start: all new");

    let out =
        bed.flow(json!({"action": "finish", "flow": "upgrade", "stream": "1.1", "run_id": "r1"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert!(!bed.stage().exists(), "the finish drops the stage");
}

#[test]
fn r35_a_rollback_leaves_units_never_installed_as_they_run_and_drops_the_stage() {
    let bed = Bed::deployed();
    let running = bed.sim.running("db.service");
    assert_eq!(bed.begin()["failed"], json!(false));
    bed.calls();
    let out = bed.units(
        "rolled_back",
        units(OLD, "1"),
        json!({"checkpoint": "upgrade"}),
    );
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(false), "nothing to undo: {out}");
    assert_eq!(bed.jobs(), Vec::<String>::new(), "no job, no reload");
    assert_eq!(bed.sim.running("db.service"), running);
    assert!(!bed.stage().exists(), "the stage is dropped");
    assert!(
        !bed.dir
            .path()
            .join("state/checkpoints/upgrade.json")
            .exists()
    );
}

#[test]
fn r35_a_rerun_restages_what_is_still_to_install_and_a_failed_migration_installs_nothing() {
    let mut bed = Bed::deployed();
    assert_eq!(bed.begin()["failed"], json!(false));
    bed.podman.oneoff_rc = 1;
    let out = bed.migrate();
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["migrations"][0].get("installed"), None, "{out}");
    assert!(bed.quadlet("app.container").contains("Image=app:1"));
    assert_eq!(bed.boot(), ["d1", "a1"], "a failed migration: all old");

    bed.podman.oneoff_rc = 0;
    assert_eq!(bed.migrate()["migrations"][0]["installed"], json!(true));
    // The rerun's preflight stages only what is still to install: app's text is on disk.
    let out = bed.begin();
    assert_eq!(out["failed"], json!(false), "{out}");
    let stage = std::fs::read_to_string(bed.stage()).expect("staged");
    assert!(
        stage.contains("db.container") && !stage.contains("app.container"),
        "{stage}"
    );
}

#[test]
fn r35_stage_without_a_checkpoint_or_present_or_started_is_refused_before_the_host_is_touched() {
    let bed = Bed::deployed();
    bed.calls();
    for extra in [
        json!({"stage": true}),
        json!({"stage": true, "checkpoint": "upgrade"}),
    ] {
        let state = if extra.get("checkpoint").is_some() {
            "stopped"
        } else {
            "present"
        };
        let out = bed.units(state, units(NEW, "2"), extra);
        assert_eq!(out["failed"], json!(true), "{out}");
        assert!(
            out["msg"]
                .as_str()
                .unwrap_or_default()
                .starts_with("stage:"),
            "{out}"
        );
    }
    assert_eq!(bed.calls(), Vec::<String>::new());
    assert!(!bed.stage().exists());
}

#[test]
fn r35_a_first_deploy_migrates_a_unit_that_is_only_staged_and_stops_nothing() {
    let bed = Bed::new();
    assert_eq!(bed.begin_flow("deploy", "1.0")["failed"], json!(false));
    assert!(!bed.dir.path().join("quadlet/app.container").exists());
    bed.calls();
    let out = bed.migrate_flow("deploy");
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["migrations"][0]["installed"], json!(true), "{out}");
    assert_eq!(out["migrations"][0].get("stopped"), None, "{out}");
    assert!(bed.quadlet("app.container").contains("Image=app:2"));
    assert_eq!(
        bed.jobs(),
        ["daemon-reload"],
        "no service to stop or start yet"
    );
}

impl Bed {
    /// The migrate phase of an update that keeps the tags (`db:1`, `app:1`); the fake podman's
    /// tag moves are then made on the simulated host, whose boots read the tags.
    fn migrate_same_tags(&self) -> Value {
        let root = self.dir.path();
        let args = json!({
            "migrations": [{"unit": "app", "command": ["migrate"]}],
            "images": {"db": "db:1", "app": "app:1"},
            "stop_first": true, "start_after": true, "min_healthy_time": 0,
            "stop_record": "update", "stage": "update",
            "quadlet_dir": root.join("quadlet"), "state_dir": root.join("state"),
        });
        let (dir, sim, podman) = (self.dir.path(), &self.sim, &self.podman);
        let out = respond_on(
            &crate::migrate::spec::SPEC,
            dir,
            &args,
            sim,
            podman,
            crate::migrate::run,
        )
        .out;
        for call in self.calls() {
            if let Some((id, target)) = call.strip_prefix("tag ").and_then(|c| c.split_once(' ')) {
                crate::podman::Podman::tag(&self.sim, id, target).expect("tag");
            }
        }
        out
    }

    fn tagged(&self, reference: &str) -> Option<String> {
        crate::podman::Podman::image_id(&self.sim, reference).expect("image id")
    }
}

/// A z-stream under the same tags: the preflight pulls `app:1` and `db:1` anew, which moves
/// the tags the unit files on disk already name. Each tag goes back at once to the image its
/// unit runs, until the unit's install: a boot before app's migration starts both old images,
/// one after it starts app's new image and db's old one, and the start phase moves db's tag.
#[test]
fn r35_a_same_tag_update_keeps_each_tag_on_the_old_image_until_its_install() {
    let mut bed = Bed::deployed();
    bed.sim.registry.insert("app:1".into(), "a9".into());
    bed.sim.registry.insert("db:1".into(), "d9".into());
    bed.podman.images.insert("a9".into(), "a9".into());
    bed.calls();
    let out = bed.flow(json!({
        "action": "begin", "flow": "update", "stream": "1.0", "run_id": "r1",
        "image_store": bed.dir.path(), "min_free_mb": 1, "pull": "always",
        "units": units(OLD, "1"), "migrations": [{"unit": "app", "command": ["migrate"]}],
    }));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["plan"]["restart_needed"], json!(true), "{out}");
    assert_eq!(out["migrations"][0]["image_id"], json!("a9"), "{out}");
    assert_eq!(
        (bed.tagged("app:1"), bed.tagged("db:1")),
        (Some("a1".into()), Some("d1".into())),
        "each tag back on the image its unit runs"
    );
    let stage =
        std::fs::read_to_string(bed.dir.path().join("state/staged/update.json")).expect("staged");
    let stage: Value = serde_json::from_str(&stage).expect("json");
    assert_eq!(
        stage["held"],
        json!({"app.container": {"image": "app:1", "id": "a9"},
               "db.container": {"image": "db:1", "id": "d9"}}),
        "{stage}"
    );
    assert_eq!(bed.boot(), ["d1", "a1"], "after the fetch: all old");

    let out = bed.migrate_same_tags();
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["migrations"][0]["installed"], json!(true), "{out}");
    let oneoff = bed.podman.oneoffs.lock().expect("oneoffs")[0].clone();
    assert_eq!(oneoff.image, "a9", "the migration ran the held image");
    assert_eq!(bed.tagged("app:1"), Some("a9".into()));
    assert_eq!(
        bed.boot(),
        ["d1", "a9"],
        "after the migration: app new, db old"
    );

    let start = json!({"stage": true, "checkpoint": "update", "pull": "never"});
    let out = bed.units("started", units(OLD, "1"), start);
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(bed.tagged("db:1"), Some("d9".into()));
    assert_eq!(
        bed.sim.running("db.service").map(|r| r.image_id),
        Some("d9".into())
    );
    assert_eq!(bed.boot(), ["d9", "a9"], "after the start: all new");
}

/// The recovery of a same-tag update puts each tag back on the image from before the run.
#[test]
fn r35_a_same_tag_update_rolled_back_leaves_the_tags_on_the_old_images() {
    let mut bed = Bed::deployed();
    bed.sim.registry.insert("db:1".into(), "d9".into());
    bed.sim.registry.insert("app:1".into(), "a1".into());
    let out = bed.flow(json!({
        "action": "begin", "flow": "update", "stream": "1.0", "run_id": "r1",
        "image_store": bed.dir.path(), "min_free_mb": 1, "pull": "always",
        "units": units(OLD, "1"),
    }));
    assert_eq!(out["failed"], json!(false), "{out}");
    // The start phase moved db's tag and restarted it; the run then failed elsewhere.
    let start = json!({"stage": true, "checkpoint": "update", "pull": "never"});
    assert_eq!(
        bed.units("started", units(OLD, "1"), start)["failed"],
        json!(false)
    );
    assert_eq!(bed.tagged("db:1"), Some("d9".into()));
    let back = json!({"checkpoint": "update"});
    let out = bed.units("rolled_back", units(OLD, "1"), back);
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(bed.tagged("db:1"), Some("d1".into()));
    assert_eq!(bed.boot(), ["d1", "a1"]);
    assert!(!bed.dir.path().join("state/staged/update.json").exists());
}
