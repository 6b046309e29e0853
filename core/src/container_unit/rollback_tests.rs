//! Rollback on the simulated host: whatever is on disk when a revision fails, the revision
//! that last converged comes back, text and image; and a rollback that cannot is never
//! reported as done. Waits run on the fake clock, without sleeping.

use crate::podman::Podman;
use crate::testing::sim::{Bed, Running};
use serde_json::{Value, json};

const IMAGE: &str = "127.0.0.1:5000/rb:1";

impl Bed {
    fn rb() -> Bed {
        Bed::new(IMAGE, "img-a")
    }

    /// container_unit on the unit `rb`.
    fn run(&self, args: Value) -> Value {
        let mut args = args;
        args["name"] = json!("rb");
        args["image"] = json!(IMAGE);
        self.run_unit(args).out
    }

    fn revision_of(&self, env: &str) -> String {
        let out =
            self.run(json!({"env": {"V": env}, "state": "started", "_ansible_check_mode": true}));
        out["revision"]["after"]
            .as_str()
            .expect("revision")
            .to_string()
    }

    fn unit_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("quadlet/rb.container")).unwrap_or_default()
    }

    /// A running, converged: its revision.
    fn with_a_running(&self) -> String {
        let out = self.run(json!({"env": {"V": "a"}, "state": "started"}));
        assert_eq!(out["failed"], json!(false), "{out}");
        self.sim.running("rb.service").expect("A runs").revision
    }
}

fn assert_back_on_a(bed: &Bed, out: &Value, a: &str) {
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains(&format!(
            "Rolled back to revision {} (image img-a)",
            &a[..12]
        )),
        "{msg}"
    );
    assert!(!msg.contains("unknown variant"), "{msg}");
    assert_eq!(
        bed.sim.running("rb.service"),
        Some(Running {
            revision: a.to_string(),
            image_id: "img-a".to_string()
        }),
        "A's revision and image run again"
    );
    assert!(
        bed.unit_text().contains("V=a"),
        "A's text is back:\n{}",
        bed.unit_text()
    );
}

#[test]
fn r22_a_unit_written_by_present_rolls_back_to_what_last_ran() {
    let bed = Bed::rb();
    let a = bed.with_a_running();
    let b = bed.revision_of("b");
    bed.sim.crash(&b);
    let written = bed.run(json!({"env": {"V": "b"}, "state": "present"}));
    assert_eq!(written["changed"], json!(true), "{written}");
    assert!(bed.unit_text().contains("V=b"));
    let out = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_back_on_a(&bed, &out, &a);
    // The failed revision is not what a later rollback would return to.
    let again = bed.run(json!({"env": {"V": "a"}, "state": "started"}));
    assert_eq!(again["changed"], json!(false), "{again}");
}

#[test]
fn r22_a_crash_looping_revision_started_directly_rolls_back() {
    let bed = Bed::rb();
    let a = bed.with_a_running();
    let b = bed.revision_of("b");
    bed.sim.crash(&b);
    let out = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_back_on_a(&bed, &out, &a);
}

#[test]
fn a_restart_of_what_already_ran_that_fails_does_not_go_back_to_an_older_revision() {
    // As a restart for a changed restart_on_change file or secret: same text, same image.
    let bed = Bed::rb();
    bed.with_a_running();
    let converged = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_eq!(converged["failed"], json!(false), "{converged}");
    let b = bed.sim.running("rb.service").expect("B runs").revision;
    bed.sim.crash(&b);
    let out = bed.run(json!({"env": {"V": "b"}, "state": "restarted"}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(false), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("changed nothing of its own"), "{msg}");
    assert!(bed.unit_text().contains("V=b"), "{}", bed.unit_text());
}

#[test]
fn r22_an_image_only_update_that_fails_goes_back_to_the_old_image() {
    let bed = Bed::rb();
    let a = bed.with_a_running();
    // A new image under the same tag that crashes: the same text on img-b fails, and img-a
    // must come back under the tag.
    bed.sim.add_image(IMAGE, "img-b");
    bed.sim.crash("img-b");
    let out = bed.run(json!({"env": {"V": "a"}, "state": "started"}));
    assert_back_on_a(&bed, &out, &a);
    assert_eq!(
        bed.sim.image_id(IMAGE).expect("image"),
        Some("img-a".into()),
        "the tag points at the old image again"
    );
}

#[test]
fn r22_a_rollback_that_cannot_converge_says_how_it_stands() {
    let bed = Bed::rb();
    let a = bed.with_a_running();
    let b = bed.revision_of("b");
    bed.sim.crash(&b);
    bed.sim.crash(&a);
    let out = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(false), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("The rollback failed"), "{msg}");
    assert!(msg.contains("did not come back either"), "{msg}");
    assert!(
        msg.contains("Now: rb.service is activating/auto-restart"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "on disk at {}",
            bed.dir.path().join("quadlet/rb.container").display()
        )),
        "{msg}"
    );
    assert!(msg.contains("refitctl rollback rb"), "{msg}");
}

#[test]
fn r22_a_rollback_whose_image_is_gone_is_not_reported_as_done() {
    let bed = Bed::rb();
    bed.with_a_running();
    let b = bed.revision_of("b");
    bed.sim.crash(&b);
    bed.run(json!({"env": {"V": "b"}, "state": "present"}));
    bed.sim.remove_image("img-a");
    bed.sim.add_image(IMAGE, "img-b");
    let out = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(false), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("is no longer on the host"), "{msg}");
    assert!(msg.contains("on disk at"), "{msg}");
}

#[test]
fn r22_a_first_install_that_fails_leaves_no_unit_behind() {
    let bed = Bed::rb();
    let b = bed.revision_of("b");
    bed.sim.crash(&b);
    let out = bed.run(json!({"env": {"V": "b"}, "state": "started"}));
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(false), "{out}");
    assert!(
        bed.unit_text().is_empty(),
        "the new unit was left:\n{}",
        bed.unit_text()
    );
    assert_eq!(bed.sim.active_state("rb.service"), "inactive");
}

#[test]
fn r22_a_state_and_a_health_refit_never_saw_do_not_break_observation() {
    let mut bed = Bed::rb();
    bed.sim.odd_state = Some("hibernating".into());
    let out = bed.run(json!({"env": {"V": "a"}, "state": "started", "timeout": 2}));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(msg.contains("no running container"), "{msg}");
    assert!(!msg.contains("unknown variant"), "{msg}");

    let mut bed = Bed::rb();
    bed.sim.health = Some("degraded".into());
    let out = bed.run(json!({
        "env": {"V": "a"}, "state": "started", "timeout": 2,
        "health_cmd": "true",
    }));
    let msg = out["msg"].as_str().unwrap_or_default();
    assert_eq!(out["failed"], json!(true), "{out}");
    assert!(
        msg.contains("\"degraded\" (a health status refit does not know)"),
        "{msg}"
    );
}

#[test]
fn r13_a_dependency_that_failed_ends_the_wait_at_once_and_is_named() {
    let mut bed = Bed::rb();
    bed.sim
        .failed_dependency
        .insert("rb.service".into(), "db.service".into());
    let out = bed.run(json!({"env": {"V": "a"}, "state": "started", "timeout": 300}));
    assert_eq!(out["failed"], json!(true), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("because a dependency failed: db.service is failed/failed (Result=exit-code)"),
        "{msg}"
    );
    assert!(
        !msg.contains("not converged within"),
        "it waited the deadline out: {msg}"
    );
}
