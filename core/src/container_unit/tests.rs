//! container_unit against fake seams: check mode touches nothing, and secrets never show.

use super::spec::SPEC;
use super::{Host, run};
use crate::ansible::driver::respond;
use crate::podman::{ContainerInfo, ContainerState};
use crate::testing::{FakeClock, FakePodman, FakeRegistry, FakeSystemd};
use serde_json::{Value, json};
use std::path::Path;

struct Bed {
    dir: tempfile::TempDir,
    systemd: FakeSystemd,
    podman: FakePodman,
    registry: FakeRegistry,
    clock: FakeClock,
}

impl Bed {
    /// A host where `hello` runs image `old-id` on an older revision.
    fn running_old() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = "[Container]\nImage=svc:1\nEnvironment=A=old\n";
        crate::testing::put_file(dir.path(), "quadlet/hello.container", old);
        let mut podman = FakePodman::default();
        podman.images.insert("svc:1".into(), "new-id".into());
        podman.containers.push(ContainerInfo {
            id: "c1".into(),
            image_id: "old-id".into(),
            revision: Some("old-rev".into()),
            unit: "hello.service".into(),
            state: ContainerState::Running,
            health: None,
            started_at: 0,
        });
        Bed {
            dir,
            systemd: FakeSystemd::with_active("hello.service", "inv-1"),
            podman,
            registry: FakeRegistry::default(),
            clock: FakeClock::default(),
        }
    }

    /// A host where `hello` runs `svc:1` (`new-id`) on the desired revision.
    fn converged() -> Bed {
        let mut bed = Bed::running_old();
        let first =
            bed.respond(json!({"name": "hello", "image": "svc:1", "_ansible_check_mode": true}));
        let rev = first["revision"]["after"]
            .as_str()
            .expect("revision")
            .to_string();
        bed.podman.containers[0].revision = Some(rev.clone());
        bed.podman.containers[0].image_id = "new-id".into();
        let unit = crate::unit::UnitFile::parse("[Container]\nImage=svc:1\n").expect("parse");
        let written = crate::unit::revision::with_revision_label(&unit, &rev);
        std::fs::write(
            bed.dir.path().join("quadlet/hello.container"),
            written.render(),
        )
        .expect("write");
        bed
    }

    fn respond(&self, args: Value) -> Value {
        let mut args = args;
        let root = self.dir.path();
        args["quadlet_dir"] = json!(root.join("quadlet"));
        args["state_dir"] = json!(root.join("state"));
        let path = root.join("args.json");
        std::fs::write(&path, args.to_string()).expect("write args");
        let host = Host {
            systemd: &self.systemd,
            podman: &self.podman,
            registry: &self.registry,
            clock: &self.clock,
            quadlet: &crate::testing::FakeQuadlet::default(),
        };
        respond(&SPEC, &path, |p, inv| run(p, inv, &host))
    }

    fn unit_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("quadlet/hello.container")).expect("read unit")
    }
}

fn redact(mut v: Value, root: &Path) -> Value {
    let root = root.display().to_string();
    let text = v.to_string().replace(&root, "[TMP]");
    v = serde_json::from_str(&text).expect("json");
    v["duration_ms"] = json!("[durations]");
    v
}

#[test]
fn check_mode_reports_the_plan_and_touches_nothing() {
    let bed = Bed::running_old();
    let before = bed.unit_text();
    let out = bed.respond(json!({
        "name": "hello", "image": "svc:1", "env": {"A": "new"}, "pull": "always",
        "_ansible_check_mode": true, "_ansible_diff": true,
    }));
    assert_eq!(bed.unit_text(), before, "check mode wrote the unit");
    assert!(
        bed.systemd.calls.lock().expect("calls").is_empty(),
        "check mode called systemd: {:?}",
        bed.systemd.calls
    );
    assert!(
        bed.podman.calls.lock().expect("calls").is_empty(),
        "check mode called podman: {:?}",
        bed.podman.calls
    );
    assert!(
        !bed.dir.path().join("state").exists(),
        "check mode created the state dir"
    );
    insta::assert_json_snapshot!(redact(out, bed.dir.path()));
}

#[test]
fn secrets_are_masked_in_the_result_and_the_diff() {
    let bed = Bed::running_old();
    let out = bed.respond(json!({
        "name": "hello", "image": "svc:1", "secret_env": {"DB_PASSWORD": "hunter22"},
        "_ansible_check_mode": true, "_ansible_diff": true,
    }));
    let text = out.to_string();
    assert!(!text.contains("hunter22"), "the secret leaked: {text}");
    assert_eq!(
        out["invocation"]["module_args"]["secret_env"],
        json!("VALUE_SPECIFIED_IN_NO_LOG_PARAMETER")
    );
    assert!(
        out["diff"]["after"]
            .as_str()
            .is_some_and(|d| d.contains(",type=env,target=DB_PASSWORD")),
        "{out}"
    );
}

/// Issue 14: a secret is a podman secret, created before the unit is written; no file refit
/// writes holds the value, and a rotated value is a new revision whose old secret stays for
/// a rollback.
#[test]
fn secret_env_becomes_a_podman_secret_and_rotates_by_revision() {
    let bed = Bed::running_old();
    let deploy = |value: &str| {
        bed.respond(json!({
            "name": "hello", "image": "svc:1", "state": "present",
            "secret_env": {"DB_PASSWORD": value}, "_ansible_diff": true,
        }))
    };
    let first = deploy("hunter22");
    assert_eq!(first["failed"], json!(false), "{first}");
    let held = bed.podman.secrets.lock().expect("secrets").clone();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(
        held.values()
            .all(|(unit, v)| unit == "hello.container" && v == "hunter22")
    );
    let calls = bed.podman.calls.lock().expect("calls").clone();
    assert!(
        calls[0].starts_with("secret create refit-hello-db_password-"),
        "{calls:?}"
    );
    let again = deploy("hunter22");
    assert_eq!(again["changed"], json!(false), "{again}");
    assert_eq!(bed.podman.calls.lock().expect("calls").len(), calls.len());
    // The first revision converged: its secret must outlive a rotation, for a rollback.
    let state = crate::state::StateDir::new(bed.dir.path().join("state"));
    let ran = crate::state::RevisionRecord {
        revision: first["revision"]["after"]
            .as_str()
            .unwrap_or_default()
            .into(),
        text: bed.unit_text(),
        image_ref: "svc:1".into(),
        image_id: Some("new-id".into()),
        recorded_at: String::new(),
        stream: None,
    };
    let mut history = crate::state::UnitHistory::default();
    history.revisions.push(ran);
    state
        .save_unit_history("hello.container", &history)
        .expect("history");
    let second = deploy("hunter23");
    assert_ne!(first["revision"]["after"], second["revision"]["after"]);
    assert_eq!(bed.podman.secrets.lock().expect("secrets").len(), 2);
    // Once no recorded revision, checkpoint or file names a secret, it goes.
    state
        .save_unit_history("hello.container", &crate::state::UnitHistory::default())
        .expect("history");
    deploy("hunter24");
    let held = bed.podman.secrets.lock().expect("secrets").clone();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held.values().all(|(_, v)| v == "hunter24"), "{held:?}");
    let mut written = bed.unit_text();
    for f in walk(&bed.dir.path().join("state")) {
        written.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    for value in ["hunter22", "hunter23"] {
        assert!(!written.contains(value), "{value} was written: {written}");
        assert!(!second.to_string().contains(value), "{second}");
    }
}

/// Issue 14: a value an older refit wrote into the unit as `Environment=` is masked in the
/// diff's "before" side, escaped forms and all.
#[test]
fn a_former_secret_in_the_file_on_disk_is_masked() {
    let bed = Bed::running_old();
    std::fs::write(
        bed.dir.path().join("quadlet/hello.container"),
        "[Container]\nImage=svc:1\nEnvironment=\"DB_PASSWORD=old \\\"pw\\\"\"\n",
    )
    .expect("write");
    let out = bed.respond(json!({
        "name": "hello", "image": "svc:1", "secret_env": {"DB_PASSWORD": "new-pw"},
        "_ansible_check_mode": true, "_ansible_diff": true,
    }));
    let before = out["diff"]["before"].as_str().unwrap_or_default();
    assert!(before.contains("DB_PASSWORD=********"), "{out}");
    assert!(!out.to_string().contains("pw\\\\"), "{out}");
}

/// Issue 14: bad input is refused, naming the parameter, before podman or systemd is asked.
#[test]
fn bad_input_names_its_parameter_and_touches_nothing() {
    let bed = Bed::running_old();
    for (args, needle) in [
        (
            json!({"name": "hello", "image": "svc:1", "exec": "sleep 1 "}),
            "exec begins or ends with white space",
        ),
        (
            json!({"units": [{"name": "a", "image": "svc:1"}, {"name": "b", "content": "[Container]\nImage=svc:1\n", "image": "svc:1"}]}),
            "units[1].content|units[1].image",
        ),
        (
            json!({"name": "w@", "image": "svc:1", "instances": ["1", "1"]}),
            "listed twice",
        ),
        (
            json!({"name": "w@", "image": "svc:1", "instances": ["1"], "install": ["WantedBy=../../etc"]}),
            "is not a unit name",
        ),
        (
            json!({"name": "a", "content": "[Container]\nImage=svc:1\n", "ports": ["80:80"]}),
            "content|ports",
        ),
        (
            json!({"units": [{"name": "ok", "image": "svc:1"}, {"name": "../x", "image": "svc:1"}]}),
            "units[1].name: unit name",
        ),
        (
            json!({"name": "a", "image": "svc:1", "secret_env": ["hunter22"]}),
            "secret_env is a no_log option",
        ),
    ] {
        let out = bed.respond(args.clone());
        assert_eq!(out["failed"], json!(true), "{args}: {out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(needle), "{args}: {msg}");
        assert!(!out.to_string().contains("hunter22"), "{out}");
    }
    assert!(bed.podman.calls.lock().expect("calls").is_empty());
    assert!(bed.systemd.calls.lock().expect("calls").is_empty());
    assert!(!bed.dir.path().join("state").exists());
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn a_converged_unit_is_left_alone() {
    let bed = Bed::converged();
    let out = bed.respond(json!({"name": "hello", "image": "svc:1"}));
    assert_eq!(out["changed"], json!(false), "{out}");
    assert_eq!(out["actions"], json!([]));
    assert!(
        bed.systemd.calls.lock().expect("calls").is_empty(),
        "{:?}",
        bed.systemd.calls
    );
}

#[test]
fn check_mode_asks_the_registry_whether_the_tag_moved() {
    let mut bed = Bed::converged();
    let check =
        json!({"name": "hello", "image": "svc:1", "pull": "always", "_ansible_check_mode": true});
    let pulled_as = format!("sha256:{}", "1".repeat(64));
    bed.podman.digests.insert(
        "svc:1".into(),
        vec![format!("docker.io/library/svc@{pulled_as}")],
    );
    bed.registry
        .digests
        .insert("docker.io/library/svc:1".into(), pulled_as);
    let same = bed.respond(check.clone());
    assert_eq!(
        (
            &same["changed"],
            &same["image"]["newer_available"],
            &same["restart_needed"]
        ),
        (&json!(false), &json!(false), &json!(false)),
        "{same}"
    );

    bed.registry.digests.insert(
        "docker.io/library/svc:1".into(),
        format!("sha256:{}", "2".repeat(64)),
    );
    let moved = bed.respond(check.clone());
    assert_eq!(moved["image"]["newer_available"], json!(true), "{moved}");
    assert_eq!(moved["actions"], json!(["pull", "restart"]));
    assert_eq!(moved["reasons"], json!(["image_changed"]));

    bed.registry.digests.clear();
    let unknown = bed.respond(check);
    assert_eq!(
        unknown["image"]["newer_available"],
        json!(null),
        "{unknown}"
    );
    assert!(
        unknown["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("answered 404")),
        "{unknown}"
    );
    assert!(bed.podman.calls.lock().expect("calls").is_empty());
    assert!(bed.systemd.calls.lock().expect("calls").is_empty());
}

#[test]
fn template_instances_get_boot_links_and_dropped_ones_lose_them() {
    let bed = Bed::running_old();
    let wants = bed.dir.path().join("systemd/multi-user.target.wants");
    std::fs::create_dir_all(&wants).expect("mkdir");
    std::os::unix::fs::symlink(
        "/run/systemd/generator/w@.service",
        wants.join("w@3.service"),
    )
    .expect("link");
    let out = bed.respond(json!({
        "name": "w@", "image": "svc:1", "instances": [1, 2], "install": ["WantedBy=multi-user.target"],
        "systemd_dir": bed.dir.path().join("systemd"), "_ansible_check_mode": true,
    }));
    let actions: Vec<String> = serde_json::from_value(out["actions"].clone()).expect("actions");
    let w = wants.display();
    assert!(
        actions.contains(&format!("link {w}/w@1.service")),
        "{actions:?}"
    );
    assert!(
        actions.contains(&format!("link {w}/w@2.service")),
        "{actions:?}"
    );
    assert!(
        actions.contains(&format!("unlink {w}/w@3.service")),
        "{actions:?}"
    );
    assert!(
        wants.join("w@3.service").symlink_metadata().is_ok(),
        "check mode removed a link"
    );
    assert!(
        wants.join("w@1.service").symlink_metadata().is_err(),
        "check mode made a link"
    );
}

/// Issue 14: a unit path that is a symlink is never written through, secrets or not.
#[test]
fn a_symlinked_unit_path_is_refused_and_its_target_untouched() {
    let bed = Bed::running_old();
    let victim = bed.dir.path().join("victim");
    std::fs::write(&victim, "keep").expect("victim");
    let unit = bed.dir.path().join("quadlet/hello.container");
    std::fs::remove_file(&unit).expect("rm");
    std::os::unix::fs::symlink(&victim, &unit).expect("link");
    let out = bed.respond(json!({
        "name": "hello", "image": "svc:1", "state": "present",
        "secret_env": {"PW": "hunter22"},
    }));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(
        out["msg"]
            .as_str()
            .is_some_and(|m| m.contains("is a symlink")),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
}

/// Issue 14: `app` and `app@` keep their previous images under two different tags, so a pull
/// for one never moves the tag a rollback of the other relies on.
#[test]
fn a_unit_and_a_template_of_one_name_keep_apart() {
    let keep_tag_of = |name: &str, unit: &str, instances: Value| {
        let mut bed = Bed::running_old();
        bed.podman.containers[0].unit = unit.into();
        if name.ends_with('@') {
            bed.systemd = FakeSystemd::with_active(unit, "inv-1");
        }
        let out = bed.respond(json!({
            "name": name, "image": "svc:1", "pull": "always", "state": "present",
            "instances": instances,
        }));
        assert_eq!(out["failed"], json!(false), "{out}");
        let calls = bed.podman.calls.lock().expect("calls").clone();
        calls
            .iter()
            .find_map(|c| c.strip_prefix("tag old-id ").map(str::to_string))
            .unwrap_or_else(|| panic!("no keep tag in {calls:?}"))
    };
    let plain = keep_tag_of("hello", "hello.service", json!([]));
    let template = keep_tag_of("hello@", "hello@1.service", json!(["1"]));
    assert!(plain.starts_with("localhost/refit-keep/hello-"), "{plain}");
    assert!(
        template.starts_with("localhost/refit-keep/hello-"),
        "{template}"
    );
    assert_ne!(plain, template);
}

/// Issue 15: a bad `socket` value is refused, naming the parameter, before any systemd or
/// podman call; a template cannot have one.
#[test]
fn bad_socket_values_are_refused_before_the_host_is_touched() {
    let bed = Bed::running_old();
    for (args, says) in [
        (
            json!({"name": "hello", "image": "svc:1", "socket": {"listen": ["127.0.0.1:0"]}}),
            "socket.listen[0]",
        ),
        (
            json!({"name": "hello", "image": "svc:1", "socket": {"listen": [8080], "backlog": "many"}}),
            "socket.backlog",
        ),
        (
            json!({"name": "worker@", "image": "svc:1", "instances": ["1"], "socket": {"listen": [8080]}}),
            "template",
        ),
    ] {
        let out = bed.respond(args);
        assert_eq!(out["failed"], json!(true), "{out}");
        assert!(
            out["msg"].as_str().is_some_and(|m| m.contains(says)),
            "{out}"
        );
    }
    assert!(bed.systemd.calls.lock().expect("calls").is_empty());
    assert!(bed.podman.calls.lock().expect("calls").is_empty());
}

#[test]
fn a_revision_found_serving_that_refit_did_not_start_is_recorded_as_the_one_that_ran() {
    // `run_migrations start_after` started it; this run restarts nothing.
    let bed = Bed::converged();
    let history = bed.dir.path().join("state/units/hello.container.json");
    let ran = || -> Value {
        let text = std::fs::read_to_string(&history).unwrap_or_else(|_| "{}".into());
        let h: Value = serde_json::from_str(&text).expect("history");
        h["revisions"]
            .as_array()
            .and_then(|r| r.last())
            .cloned()
            .unwrap_or(Value::Null)
    };
    let rev = bed.podman.containers[0].revision.clone().expect("revision");
    assert_eq!(ran(), Value::Null, "nothing recorded yet");
    let out = bed.respond(json!({"name": "hello", "image": "svc:1", "state": "started"}));
    assert_eq!(out["changed"], json!(false), "{out}");
    assert!(
        bed.systemd.calls.lock().expect("calls").is_empty(),
        "nothing restarted"
    );
    let last = ran();
    assert_eq!(last["revision"], json!(rev), "{last}");
    assert_eq!(last["image_id"], json!("new-id"), "{last}");
}
