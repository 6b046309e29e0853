//! A `.network` whose change needs a new network, on the simulated host: its users stop, the
//! network is removed and its service started again, then the users start; the rest keep
//! running, and check mode names the recreation and touches nothing.

use crate::testing::sim::Bed;
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/svc:1";

fn stack(label: &str) -> Value {
    json!({"units": [
        {"name": "app.network", "content": format!("[Network]\nDriver=loopback\nLabel={label}\n")},
        {"name": "web.container", "content": format!("[Container]\nImage={IMAGE}\nNetwork=app.network\n")},
        {"name": "side.container", "content": format!("[Container]\nImage={IMAGE}\nNetwork=none\n")},
    ]})
}

fn unit<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["units"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["unit"] == json!(name)))
        .unwrap_or_else(|| panic!("no {name} in {out}"))
}

/// Every call that changes something since the last look, in order.
fn calls(bed: &Bed) -> Vec<String> {
    std::mem::take(&mut *bed.sim.calls.lock().expect("calls"))
        .into_iter()
        .filter(|c| !c.starts_with("reset-failed"))
        .collect()
}

#[test]
fn a_network_option_recreates_the_network_with_exactly_its_users_stopped_first() {
    let mut bed = Bed::new(IMAGE, "img-1");
    let ran = bed.run_unit(stack("v=1"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    bed.sim.networks.push("systemd-app".into());
    calls(&bed);

    let mut check = stack("v=2");
    check["_ansible_check_mode"] = json!(true);
    let asked = bed.run_unit(check).out;
    let net = unit(&asked, "app.network");
    assert_eq!(net["network_recreated"], json!("systemd-app"), "{asked}");
    assert!(
        net["actions"]
            .as_array()
            .expect("actions")
            .contains(&json!("recreate_network")),
        "{net}"
    );
    assert_eq!(
        calls(&bed),
        Vec::<String>::new(),
        "check mode touched the host"
    );

    let ran = bed.run_unit(stack("v=2")).out;
    assert_eq!(ran["failed"], json!(false), "{ran}");
    assert_eq!(
        unit(&ran, "app.network")["network_recreated"],
        json!("systemd-app")
    );
    let done = calls(&bed);
    let at = |c: &str| {
        done.iter()
            .position(|d| d == c)
            .unwrap_or_else(|| panic!("no {c} in {done:?}"))
    };
    assert!(at("daemon-reload") < at("stop web.service"), "{done:?}");
    assert!(
        at("stop web.service") < at("network rm systemd-app"),
        "{done:?}"
    );
    assert!(
        at("network rm systemd-app") < at("restart app-network.service"),
        "{done:?}"
    );
    let web_again = done
        .iter()
        .rposition(|d| d.ends_with(" web.service") && !d.starts_with("stop"))
        .expect("web started again");
    assert!(at("restart app-network.service") < web_again, "{done:?}");
    assert!(
        done.iter().all(|d| !d.contains("side.service")),
        "side does not join the network: {done:?}"
    );
    assert_eq!(ran["restarted_services"], json!(["web.service"]), "{ran}");

    // A change of how podman is called needs no new network.
    let mut args = stack("v=2");
    args["units"][0]["content"] =
        json!("[Network]\nDriver=loopback\nLabel=v=2\nGlobalArgs=--log-level=info\n");
    let ran = bed.run_unit(args).out;
    assert_eq!(ran["failed"], json!(false), "{ran}");
    assert!(unit(&ran, "app.network").get("network_recreated").is_none());
    assert!(calls(&bed).iter().all(|c| !c.starts_with("network rm")));
}

#[test]
fn a_network_podman_does_not_have_yet_is_only_written() {
    let bed = Bed::new(IMAGE, "img-1");
    let ran = bed.run_unit(stack("v=1"));
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    let ran = bed.run_unit(stack("v=2")).out;
    assert_eq!(ran["failed"], json!(false), "{ran}");
    assert!(unit(&ran, "app.network").get("network_recreated").is_none());
    let done = calls(&bed);
    assert!(
        done.iter().all(|c| !c.starts_with("network rm")),
        "{done:?}"
    );
}

#[test]
fn a_user_failing_after_the_recreation_brings_the_old_network_back_with_every_user() {
    let mut bed = Bed::new(IMAGE, "img-1");
    let mut two = stack("v=1");
    two["units"].as_array_mut().expect("units").push(json!(
        {"name": "web2.container", "content": format!("[Container]\nImage={IMAGE}\nNetwork=app.network\n")}
    ));
    let ran = bed.run_unit(two.clone());
    assert_eq!(ran.out["failed"], json!(false), "{}", ran.out);
    bed.sim.networks.push("systemd-app".into());
    let mut changed = two.clone();
    changed["units"][0]["content"] = json!("[Network]\nDriver=loopback\nLabel=v=2\n");
    let mut check = changed.clone();
    check["_ansible_check_mode"] = json!(true);
    let asked = bed.run_unit(check).out;
    let web = unit(&asked, "web.container")["revision"]["after"]
        .as_str()
        .expect("revision")
        .to_string();
    bed.sim.crash(&web);
    calls(&bed);

    let ran = bed.run_unit(changed).out;
    assert_eq!(ran["failed"], json!(true), "{ran}");
    let msg = ran["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("the network systemd-app was made anew with the older text"),
        "{msg}"
    );
    let done = calls(&bed);
    let removals = done
        .iter()
        .filter(|c| *c == "network rm systemd-app")
        .count();
    assert_eq!(
        removals, 2,
        "made anew, then again with the older text: {done:?}"
    );
    for svc in ["web.service", "web2.service", "side.service"] {
        assert_eq!(bed.sim.active_state(svc), "active", "{svc}: {done:?}");
    }
    let text = std::fs::read_to_string(bed.dir.path().join("quadlet/app.network")).expect("file");
    assert!(text.contains("Label=v=1"), "{text}");
}
