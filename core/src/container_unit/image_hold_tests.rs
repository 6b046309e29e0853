//! A rollback behind an `.image` unit holds its tag across a boot, and the next run that pulls
//! the tag and converges lifts the hold. On the simulated host.

use crate::testing::sim::Bed;
use crate::unit::dropins::ROLLBACK_HOLD;
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/hold:stable";

/// The container alone: its `.image` unit is on disk, as another run left it (the simulated
/// host runs no `.image` service).
fn stack(pull: &str) -> Value {
    json!({"units": [
        {"name": "web.container", "content": "[Container]\nImage=app.image\n"},
    ], "state": "started", "pull": pull})
}

fn bed() -> Bed {
    let bed = Bed::new(IMAGE, "img-a");
    crate::testing::put_file(
        bed.dir.path(),
        "quadlet/app.image",
        &format!("[Image]\nImage={IMAGE}\n"),
    );
    bed
}

fn hold_text(bed: &Bed) -> Option<String> {
    let path = bed
        .dir
        .path()
        .join("quadlet/app.image.d")
        .join(ROLLBACK_HOLD);
    std::fs::read_to_string(path).ok()
}

fn actions_of(out: &Value, unit: &str) -> Vec<Value> {
    out["units"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|u| u["unit"] == json!(unit))
        .and_then(|u| u["actions"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn a_rollback_behind_an_image_unit_holds_its_tag_until_a_pulled_run_converges() {
    let mut bed = bed();
    let first = bed.run_unit(stack("missing")).out;
    assert_eq!(first["failed"], json!(false), "{first}");
    assert_eq!(hold_text(&bed), None, "nothing to hold yet");

    // A crashing image under the tag: the container goes back to img-a, and the boot's pull
    // of the tag is followed by pointing it at img-a again.
    bed.sim.add_image(IMAGE, "img-b");
    bed.sim.crash("img-b");
    let crashed = bed.run_unit(stack("missing")).out;
    assert_eq!(crashed["rolled_back"], json!(true), "{crashed}");
    let msg = crashed["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("app.image holds its tag"), "{msg}");
    let hold = hold_text(&bed).expect("the rollback holds the tag");
    assert!(
        hold.contains(&format!(
            "[Service]\nExecStartPost=podman image tag img-a {IMAGE}\n"
        )),
        "{hold}"
    );
    assert_eq!(
        bed.sim.running("web.service").expect("runs").image_id,
        "img-a"
    );

    // A run that never asks the registry cannot tell the tag moved on: the hold stays, and
    // the hold is no part of any revision, so nothing restarts.
    let kept = bed.run_unit(stack("missing")).out;
    assert_eq!(kept["changed"], json!(false), "{kept}");
    assert!(
        hold_text(&bed).is_some(),
        "a run that did not pull lifted the hold"
    );

    // The registry's tag names a good image: the run pulls it, converges, and lifts the hold.
    bed.sim.registry.insert(IMAGE.into(), "img-c".into());
    let fixed = bed.run_unit(stack("always")).out;
    assert_eq!(fixed["failed"], json!(false), "{fixed}");
    assert_eq!(
        bed.sim.running("web.service").expect("runs").image_id,
        "img-c"
    );
    assert_eq!(hold_text(&bed), None, "the converged run lifted the hold");
    assert!(
        actions_of(&fixed, "web.container").contains(&json!("lift_image_hold")),
        "{fixed}"
    );
    assert!(!bed.dir.path().join("quadlet/app.image.d").exists());
}

#[test]
fn a_requested_rollback_behind_an_image_unit_holds_its_tag() {
    let mut bed = bed();
    assert_eq!(bed.run_unit(stack("missing")).out["failed"], json!(false));
    bed.sim.registry.insert(IMAGE.into(), "img-b".into());
    let updated = bed.run_unit(stack("always")).out;
    assert_eq!(updated["failed"], json!(false), "{updated}");
    assert_eq!(
        bed.sim.running("web.service").expect("runs").image_id,
        "img-b"
    );
    let back = bed
        .run_unit(json!({"units": [{"name": "web.container"}], "state": "rolled_back"}))
        .out;
    assert_eq!(back["failed"], json!(false), "{back}");
    assert_eq!(
        bed.sim.running("web.service").expect("runs").image_id,
        "img-a"
    );
    let hold = hold_text(&bed).expect("the rollback holds the tag");
    assert!(
        hold.contains(&format!("podman image tag img-a {IMAGE}")),
        "{hold}"
    );
    assert!(actions_of(&back, "web.container").contains(&json!("hold_image_tag")));
}
