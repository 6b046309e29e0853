//! Units of every kind in one run: references order them, an `.image` unit names the image its
//! containers run, and a changed resource restarts exactly the containers that use it.

use super::spec::SPEC;
use super::{Host, run};
use crate::ansible::driver::respond;
use crate::podman::{ContainerInfo, ContainerState};
use crate::testing::{FakeClock, FakePodman, FakeQuadlet, FakeRegistry, FakeSystemd};
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/svc:stable";

fn stack(volume: &str) -> Value {
    json!({"units": [
        {"name": "web.container", "content":
            "[Container]\nImage=app.image\nNetwork=app.network\nVolume=data.volume:/data\n"},
        {"name": "side.container", "image": "127.0.0.1:5000/side:1"},
        {"name": "app.network", "content": "[Network]\nInternal=true\n"},
        {"name": "data.volume", "content": format!("[Volume]\n{volume}")},
        {"name": "app.image", "content": format!("[Image]\nImage={IMAGE}\n")},
    ], "pull": "missing", "_ansible_check_mode": true})
}

struct Bed {
    dir: tempfile::TempDir,
    systemd: FakeSystemd,
    podman: FakePodman,
}

impl Bed {
    fn new() -> Bed {
        let mut podman = FakePodman::default();
        podman.images.insert(IMAGE.into(), "svc-id".into());
        podman
            .images
            .insert("127.0.0.1:5000/side:1".into(), "side-id".into());
        Bed {
            dir: tempfile::tempdir().expect("tmp"),
            systemd: FakeSystemd::default(),
            podman,
        }
    }

    fn respond(&self, mut args: Value) -> Value {
        let root = self.dir.path();
        args["quadlet_dir"] = json!(root.join("quadlet"));
        args["state_dir"] = json!(root.join("state"));
        let path = root.join("args.json");
        std::fs::write(&path, args.to_string()).expect("args");
        let (registry, clock, quadlet) = (
            FakeRegistry::default(),
            FakeClock::default(),
            FakeQuadlet::default(),
        );
        let host = Host {
            systemd: &self.systemd,
            podman: &self.podman,
            registry: &registry,
            clock: &clock,
            quadlet: &quadlet,
        };
        respond(&SPEC, &path, |p, inv| run(p, inv, &host))
    }

    /// Puts the stack on the host as a run would leave it: each file written under the
    /// revision check mode named, each service active, each container on it.
    fn converge(&mut self, out: &Value) {
        let q = self.dir.path().join("quadlet");
        std::fs::create_dir_all(&q).expect("mkdir");
        for u in units(out) {
            let name = u["unit"].as_str().expect("unit");
            let rev = u["revision"]["after"].as_str().expect("rev");
            let service = u["service"].as_str().expect("service").to_string();
            let text = u["diff_text"].as_str().map(str::to_string);
            let unit = crate::unit::UnitFile::parse(&text.unwrap_or_default()).expect("parses");
            std::fs::write(q.join(name), unit.render()).expect("write");
            let status = FakeSystemd::with_active(&service, "inv-1");
            self.systemd.units.extend(status.units);
            if let Some(image_id) = u["image"]["id"].as_str() {
                self.podman.containers.push(ContainerInfo {
                    id: format!("c-{name}"),
                    image_id: image_id.into(),
                    revision: Some(rev.into()),
                    unit: service,
                    state: ContainerState::Running,
                    health: None,
                    started_at: 0,
                });
            }
        }
    }
}

fn units(out: &Value) -> Vec<Value> {
    let mut units = out["units"].as_array().expect("units").clone();
    // The text each would write, from the diff, for `converge`.
    for (u, d) in units
        .iter_mut()
        .zip(out["diff"].as_array().into_iter().flatten())
    {
        u["diff_text"] = d["after"].clone();
    }
    units
}

fn names(out: &Value) -> Vec<String> {
    units(out)
        .iter()
        .map(|u| u["unit"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn resources_come_first_and_the_image_unit_names_the_image() {
    let bed = Bed::new();
    let out = bed.respond(stack(""));
    assert_eq!(out["failed"], json!(false), "{out}");
    let order = names(&out);
    let at = |n: &str| order.iter().position(|o| o == n).expect(n);
    for resource in ["app.network", "data.volume", "app.image"] {
        assert!(at(resource) < at("web.container"), "{order:?}");
    }
    let web = &units(&out)[at("web.container")];
    assert_eq!(web["image"]["ref"], json!(IMAGE), "{web}");
    assert_eq!(
        units(&out)[at("app.network")]["service"],
        json!("app-network.service")
    );
}

#[test]
fn a_changed_volume_restarts_exactly_its_users() {
    let mut bed = Bed::new();
    let mut args = stack("");
    args["_ansible_diff"] = json!(true);
    let first = bed.respond(args);
    bed.converge(&first);
    let again = bed.respond(stack(""));
    assert_eq!(
        again["changed"],
        json!(false),
        "a converged stack changed: {again}"
    );
    let changed = bed.respond(stack("Label=tier=data\n"));
    let by_name: Vec<(String, Vec<Value>)> = units(&changed)
        .iter()
        .filter(|u| !u["actions"].as_array().expect("actions").is_empty())
        .map(|u| {
            let name = u["unit"].as_str().unwrap_or_default().to_string();
            (name, u["actions"].as_array().cloned().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        by_name,
        [
            (
                "data.volume".to_string(),
                vec![json!("write_unit"), json!("daemon_reload")]
            ),
            (
                "web.container".to_string(),
                vec![
                    json!("write_unit"),
                    json!("daemon_reload"),
                    json!("restart")
                ]
            ),
        ],
        "{changed}"
    );
}

#[test]
fn a_dangling_reference_names_both_units_and_a_kube_unit_is_refused() {
    let bed = Bed::new();
    let out = bed.respond(json!({"units": [
        {"name": "web.container", "content": "[Container]\nImage=a:1\nVolume=gone.volume:/d\n"},
    ], "_ansible_check_mode": true}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("web.container") && msg.contains("gone.volume"),
        "{msg}"
    );
    let out = bed.respond(json!({"units": [
        {"name": "k.kube", "content": "[Kube]\nYaml=x.yml\n"},
    ], "_ansible_check_mode": true}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("k.kube") && msg.contains(".kube unit"),
        "{msg}"
    );
}

#[test]
fn a_volume_option_podman_cannot_change_in_place_is_refused_before_anything() {
    let mut bed = Bed::new();
    let mut args = stack("Label=tier=a\n");
    args["_ansible_diff"] = json!(true);
    let first = bed.respond(args);
    bed.converge(&first);
    let file = bed.dir.path().join("quadlet/data.volume");
    let before = std::fs::read_to_string(&file).expect("written");
    // The volume does not exist yet: its new label is to be written, to be made with it.
    let unmade = bed.respond(stack("Label=tier=b\n"));
    assert_eq!(unmade["failed"], json!(false), "{unmade}");
    assert_eq!(unmade["changed"], json!(true), "{unmade}");
    bed.podman.volumes.push("systemd-data".into());
    let calls = |bed: &Bed| {
        let systemd = bed.systemd.calls.lock().expect("calls").len();
        (systemd, bed.podman.calls.lock().expect("calls").len())
    };
    let before_calls = calls(&bed);
    let mut args = stack("Label=tier=b\n");
    args["_ansible_check_mode"] = json!(false);
    let out = bed.respond(args);
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("data.volume changes Label=") && msg.contains("podman volume rm systemd-data"),
        "{msg}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("kept"), before);
    assert_eq!(calls(&bed), before_calls, "the host was touched");
    assert!(!bed.dir.path().join("state/lock").exists());
    // A change to the service's own sections passes.
    let about = bed.respond(stack("Label=tier=a\n[Unit]\nDescription=data\n"));
    assert_eq!(about["failed"], json!(false), "{about}");
}

#[test]
fn a_network_podman_will_not_remove_leaves_its_users_running_and_says_so() {
    let mut bed = Bed::new();
    let mut args = stack("");
    args["_ansible_diff"] = json!(true);
    let first = bed.respond(args);
    bed.converge(&first);
    bed.podman.networks.push("systemd-app".into());
    bed.podman.network_in_use = true;
    let mut args = stack("");
    args["units"][2]["content"] = json!("[Network]\nInternal=false\n");
    args["_ansible_check_mode"] = json!(false);
    let out = bed.respond(args);
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("podman did not remove the network systemd-app")
            && msg.contains("network is being used"),
        "{msg}"
    );
    let calls = bed.systemd.calls.lock().expect("calls").clone();
    let at = |c: &str| calls.iter().position(|d| d == c);
    assert!(
        at("stop web.service") < at("start web.service") && at("stop web.service").is_some(),
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.contains("app-network.service")),
        "{calls:?}"
    );
}
