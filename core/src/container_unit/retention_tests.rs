//! Retention on the simulated host: which images go and which stay after z-stream updates,
//! what protects an image, and `rollback_to` by a history id. Every pull brings a new image ID
//! under the same tag, as a moving stream tag (svc:1.0) does.

use crate::testing::sim::Bed;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const IMAGE: &str = "127.0.0.1:5000/ret:1.0";
const KEEP_REPO_PREFIX: &str = "localhost/refit-keep/ret-";

/// A bed where `ret:1.0` is local as `img-0`, an image refit never pulled.
fn bed() -> Bed {
    Bed::new(IMAGE, "img-0")
}

/// Publishes `id` under the tag and runs an update with `pull: always`.
fn update(bed: &mut Bed, id: &str, extra: Value) -> Value {
    bed.sim.registry.insert(IMAGE.into(), id.into());
    let mut args = json!({"name": "ret", "image": IMAGE, "pull": "always", "state": "started"});
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    let out = bed.run_unit(args).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    out
}

fn ids(set: &[&str]) -> BTreeSet<String> {
    set.iter().map(|s| s.to_string()).collect()
}

fn history(bed: &Bed) -> Vec<Value> {
    let out = bed
        .run_unit(
            json!({"name": "ret", "image": IMAGE, "state": "present", "history": true,
                         "_ansible_check_mode": true}),
        )
        .out;
    out["history"].as_array().cloned().unwrap_or_default()
}

#[test]
fn ten_updates_leave_the_kept_images_and_the_one_refit_never_pulled() {
    let mut bed = bed();
    for n in 1..=10u32 {
        let out = update(&mut bed, &format!("img-{n}"), json!({"keep_revisions": 3}));
        let kept: Vec<String> = (n.saturating_sub(2).max(1)..=n)
            .map(|k| format!("img-{k}"))
            .collect();
        let mut want: BTreeSet<String> = kept.iter().cloned().collect();
        // img-0 was local before refit: it is no candidate, ever.
        want.insert("img-0".into());
        assert_eq!(bed.sim.image_ids(), want, "after update {n}: {out}");
        for id in &kept {
            assert!(
                bed.sim
                    .tags_of(id)
                    .iter()
                    .any(|t| t.starts_with(KEEP_REPO_PREFIX) && t.ends_with(&format!(":img-{id}"))),
                "{id} carries its keep tag: {:?}",
                bed.sim.tags_of(id)
            );
        }
        if n >= 4 {
            let gone = format!("img-{}", n - 3);
            assert_eq!(
                out["images_pruned"],
                json!([{"id": gone, "bytes": crate::testing::sim::IMAGE_BYTES}]),
                "{out}"
            );
            assert!(
                out["msg"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("removed 1 image no kept revision uses, freeing 1.0 MB"),
                "{out}"
            );
        } else {
            assert!(out.get("images_pruned").is_none(), "{out}");
        }
    }
    let h = history(&bed);
    let images: Vec<&str> = h.iter().filter_map(|e| e["image_id"].as_str()).collect();
    assert_eq!(images, ["img-8", "img-9", "img-10"]);
    assert!(h.iter().all(|e| e["local"] == json!(true)), "{h:?}");
    assert_eq!(h[2]["current"], json!(true));
}

#[test]
fn an_image_a_container_or_another_tag_uses_stays_until_neither_does() {
    let mut bed = bed();
    let one = json!({"keep_revisions": 1});
    update(&mut bed, "img-1", one.clone());
    bed.sim.foreign_users.insert("img-1".into());
    update(&mut bed, "img-2", one.clone());
    bed.sim.add_image("mine:pinned", "img-2");
    let out = update(&mut bed, "img-3", one.clone());
    assert_eq!(
        bed.sim.image_ids(),
        ids(&["img-0", "img-1", "img-2", "img-3"]),
        "{out}"
    );
    assert!(out.get("images_pruned").is_none(), "{out}");
    // The refit tags of images no kept revision runs are gone; the other tag stays.
    assert_eq!(bed.sim.tags_of("img-2"), ["mine:pinned"]);
    assert!(bed.sim.tags_of("img-1").is_empty());
    // Once nothing else holds them, the next update removes both.
    bed.sim.foreign_users.clear();
    let _ = crate::podman::ImageStore::untag(&bed.sim, "img-2", "mine:pinned");
    let out = update(&mut bed, "img-4", one);
    let mut pruned: Vec<&str> = out["images_pruned"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["id"].as_str())
        .collect();
    pruned.sort();
    assert_eq!(pruned, ["img-1", "img-2", "img-3"], "{out}");
    assert_eq!(bed.sim.image_ids(), ids(&["img-0", "img-4"]));
}

#[test]
fn rollback_to_goes_two_back_and_keeps_the_one_it_left() {
    let mut bed = bed();
    for n in 1..=4 {
        update(&mut bed, &format!("img-{n}"), json!({}));
    }
    let h = history(&bed);
    assert_eq!(h.len(), 4);
    let two_back = h[1]["id"].as_str().expect("id").to_string();
    let out = bed
        .run_unit(json!({"name": "ret", "state": "rolled_back", "rollback_to": &two_back[..7]}))
        .out;
    assert_eq!(out["failed"], json!(false), "{out}");
    let image = bed.sim.running("ret.service").expect("it runs").image_id;
    assert_eq!(image, "img-2", "{out}");
    let after: Vec<String> = history(&bed)
        .iter()
        .filter_map(|e| e["image_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        after,
        ["img-1", "img-3", "img-4", "img-2"],
        "img-4 stays kept"
    );
    // Forward again, to the revision it left.
    let four = h[3]["id"].as_str().expect("id");
    let out = bed
        .run_unit(json!({"name": "ret", "state": "rolled_back", "rollback_to": four}))
        .out;
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(
        bed.sim.running("ret.service").expect("runs").image_id,
        "img-4"
    );
}

#[test]
fn an_unknown_prefix_is_refused_naming_the_kept_ids_and_nothing_moves() {
    let mut bed = bed();
    update(&mut bed, "img-1", json!({}));
    update(&mut bed, "img-2", json!({}));
    let h = history(&bed);
    let out = bed
        .run_unit(json!({"name": "ret", "state": "rolled_back", "rollback_to": "nothere"}))
        .out;
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("no kept revision of ret.container starts with \"nothere\""),
        "{msg}"
    );
    for e in &h {
        assert!(msg.contains(e["id"].as_str().unwrap_or("?")), "{msg}");
    }
    assert_eq!(
        bed.sim.running("ret.service").expect("runs").image_id,
        "img-2"
    );
}

#[test]
fn rollback_to_without_rolled_back_and_a_keep_of_zero_are_refused() {
    let bed = bed();
    let out = bed
        .run_unit(json!({"name": "ret", "image": IMAGE, "rollback_to": "abc"}))
        .out;
    assert!(
        out["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("give rollback_to only with state: rolled_back"),
        "{out}"
    );
    let out = bed
        .run_unit(json!({"name": "ret", "image": IMAGE, "keep_revisions": 0}))
        .out;
    assert!(
        out["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("keep_revisions must be from 1 to 100"),
        "{out}"
    );
    assert!(bed.sim.running("ret.service").is_none());
}

#[test]
fn a_rollback_to_an_image_a_prune_took_says_so_and_history_shows_it() {
    let mut bed = bed();
    update(&mut bed, "img-1", json!({}));
    update(&mut bed, "img-2", json!({}));
    // `podman image prune -a` while img-1 has no container.
    bed.sim.remove_image("img-1");
    let h = history(&bed);
    assert_eq!(h[0]["local"], json!(false), "{h:?}");
    let out = bed
        .run_unit(json!({"name": "ret", "state": "rolled_back", "rollback_to": h[0]["id"]}))
        .out;
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(
        out["msg"].as_str().unwrap_or_default().contains("img-1"),
        "{out}"
    );
    assert_eq!(
        bed.sim.running("ret.service").expect("runs").image_id,
        "img-2"
    );
}

#[test]
fn a_flow_pulls_with_present_and_its_start_prunes_with_the_roles_count() {
    let mut bed = bed();
    for n in 1..=4 {
        let id = format!("img-{n}");
        bed.sim.registry.insert(IMAGE.into(), id.clone());
        // The preflight: `present`, pulling, with the default count; nothing is trimmed.
        let pre = bed
            .run_unit(json!({"name": "ret", "image": IMAGE, "pull": "always", "state": "present"}))
            .out;
        assert!(pre.get("images_pruned").is_none(), "{pre}");
        let start = bed
            .run_unit(
                json!({"name": "ret", "image": IMAGE, "pull": "never", "state": "started",
                             "keep_revisions": 2}),
            )
            .out;
        assert_eq!(start["failed"], json!(false), "{start}");
        assert_eq!(bed.sim.running("ret.service").expect("runs").image_id, id);
    }
    assert_eq!(bed.sim.image_ids(), ids(&["img-0", "img-3", "img-4"]));
}

#[test]
fn a_corrupt_lease_is_refused_as_every_other_reader_refuses_it() {
    use crate::state::{StateDir, StateError};
    let d = tempfile::tempdir().expect("tmp");
    let state = StateDir::new(d.path());
    std::fs::write(d.path().join("stream"), "1.0\n").expect("stream");
    assert_eq!(
        super::retention::stream_now(&state).expect("no lease"),
        Some("1.0".into())
    );
    std::fs::write(state.lease_file(), "{\"flow\": \"upd").expect("lease");
    let err = super::retention::stream_now(&state).expect_err("a corrupt lease is refused");
    assert!(matches!(err, StateError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("flow-lease.json"), "{err}");
}
