use super::*;
use crate::testing::{FakePodman, FakeSystemd, respond_on};
use serde_json::json;

/// The module's answer to one step, through the driver as Ansible calls it, on fakes that
/// record every call that would touch the host.
fn answer(step: serde_json::Value) -> (serde_json::Value, usize, bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = json!({
        "steps": [step],
        "stage": "upgrade",
        "quadlet_dir": dir.path().join("quadlet"),
        "state_dir": dir.path().join("state"),
    });
    let (podman, systemd) = (FakePodman::default(), FakeSystemd::default());
    let out = respond_on(&spec::SPEC, dir.path(), &args, &systemd, &podman, run_steps).out;
    let calls =
        podman.calls.lock().expect("calls").len() + systemd.calls.lock().expect("calls").len();
    (out, calls, dir.path().join("state").exists())
}

#[test]
fn bad_input_is_refused_by_parameter_before_anything_is_touched() {
    for (step, word) in [
        (
            json!({"unit": "db", "tables": ["pulp.core_task"]}),
            "tables",
        ),
        (
            json!({"unit": "db", "tables": ["pulp.public.t;DROP"]}),
            "tables",
        ),
        (json!({"unit": "db", "checks": ["SELECT 1"]}), "checks"),
        (
            json!({"unit": "db", "checks": ["pulp:SELECT 1\nSELECT 2"]}),
            "checks",
        ),
        (json!({"unit": "db", "data_dir": "data"}), "data_dir"),
        (json!({"unit": "db", "method": "rsync"}), "method"),
        (json!({"unit": "db", "transfer": "move"}), "transfer"),
        (json!({"unit": "../db"}), "../db"),
    ] {
        let (out, calls, state) = answer(step);
        assert_eq!(out["failed"], json!(true), "{out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(word), "{word}: {msg}");
        assert_eq!(calls, 0, "nothing asked of podman or systemd: {msg}");
        assert!(!state, "nothing written, not even a lock: {msg}");
    }
}

#[test]
fn a_unit_not_installed_yet_has_no_data_to_move() {
    let (out, calls, _) = answer(json!({"unit": "db"}));
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["changed"], json!(false), "{out}");
    assert_eq!(calls, 0);
}

const INSTALLED: &str = "[Container]\nImage=r/pg:15\nVolume=pg-15:/var/lib/postgresql/data\n";
const STAGED: &str = "[Container]\nImage=r/pg:17\nVolume=pg-17:/var/lib/postgresql/data\n";

/// What a step moving `db` from `r/pg:15` in `pg-15` to `r/pg:17` in `pg-17` answered on
/// `podman`, and every call it made to podman and to systemd.
struct Moved {
    out: serde_json::Value,
    podman_calls: Vec<String>,
    systemd_calls: Vec<String>,
}

fn answer_moving(step: serde_json::Value, podman: FakePodman) -> Moved {
    let dir = tempfile::tempdir().expect("tempdir");
    crate::testing::put_file(dir.path(), "quadlet/db.container", INSTALLED);
    let state = crate::state::StateDir::new(dir.path().join("state"));
    let stage = crate::state::Stage {
        units: [(
            "db.container".to_string(),
            crate::state::Staged {
                revision: "r2".into(),
                text: STAGED.into(),
            },
        )]
        .into(),
        ..Default::default()
    };
    state.save_stage("upgrade", &stage).expect("stage");
    let args = json!({
        "steps": [step],
        "stage": "upgrade",
        "quadlet_dir": dir.path().join("quadlet"),
        "state_dir": dir.path().join("state"),
    });
    // The database is installed and stopped already: a step that goes on has nothing to stop.
    let mut systemd = FakeSystemd::default();
    let props = [("LoadState", "loaded"), ("ActiveState", "inactive")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    systemd.units.insert(
        "db.service".into(),
        crate::systemd::UnitStatus {
            name: "db.service".into(),
            props,
        },
    );
    let out = respond_on(&spec::SPEC, dir.path(), &args, &systemd, &podman, run_steps).out;
    let installed = std::fs::read_to_string(dir.path().join("quadlet/db.container")).expect("unit");
    assert!(
        out["failed"] == json!(false) || installed == INSTALLED,
        "a refused step leaves the installed text: {installed}"
    );
    Moved {
        out,
        podman_calls: podman.calls.lock().expect("calls").clone(),
        systemd_calls: systemd.calls.lock().expect("calls").clone(),
    }
}

/// Both images on the host; the old volume holds `major`, `size_kb` big with `avail_kb` free,
/// and the new image runs `new_major`.
fn podman_with(major: u32, size_kb: u64, avail_kb: u64, new_major: u32) -> FakePodman {
    FakePodman {
        images: [("r/pg:15", "id15"), ("r/pg:17", "id17")]
            .map(|(r, i)| (r.to_string(), i.to_string()))
            .into(),
        oneoff_says: [
            (
                "probe".to_string(),
                format!(
                    "refit-data-step: major={major}\nrefit-data-step: size_kb={size_kb}\nrefit-data-step: avail_kb={avail_kb}\n"
                ),
            ),
            (
                "major".to_string(),
                format!("refit-data-step: major={new_major}\n"),
            ),
        ]
        .into(),
        ..FakePodman::default()
    }
}

/// A refusal of the preflight: it fails saying `words`, before anything stopped, and no
/// container but the two read-only probes ran.
fn assert_refused_before_stop(m: &Moved, words: &[&str]) {
    assert_eq!(m.out["failed"], json!(true), "{}", m.out);
    let msg = m.out["msg"].as_str().unwrap_or_default();
    for w in words {
        assert!(msg.contains(w), "{w}: {msg}");
    }
    assert!(
        m.systemd_calls.is_empty(),
        "nothing stopped: {:?}",
        m.systemd_calls
    );
    // Each call ends with the script's phase and its arguments: only the probes ran.
    assert!(
        m.podman_calls
            .iter()
            .all(|c| c.ends_with("refit-data-step probe") || c.ends_with("refit-data-step major")),
        "no copy or build ran: {:?}",
        m.podman_calls
    );
}

#[test]
fn an_old_image_that_is_gone_is_refused_before_anything_runs() {
    let mut podman = podman_with(15, 1000, 1_000_000, 17);
    podman.images.remove("r/pg:15");
    let m = answer_moving(json!({"unit": "db"}), podman);
    assert_refused_before_stop(&m, &["r/pg:15", "gone", "podman pull"]);
    assert!(
        m.podman_calls.is_empty(),
        "not even a probe: {:?}",
        m.podman_calls
    );
}

#[test]
fn a_major_downgrade_is_refused_before_anything_stops() {
    let m = answer_moving(json!({"unit": "db"}), podman_with(17, 1000, 1_000_000, 15));
    assert_refused_before_stop(&m, &["PostgreSQL 15", "older than", "17", "downgrade"]);
}

#[test]
fn too_little_disk_for_the_method_is_refused_before_anything_stops() {
    // 1 GB of cluster and 1.5 GB free: enough for link (one private copy), not for copy or a dump.
    let gb = 1024 * 1024;
    for (step, hint) in [
        (json!({"unit": "db", "transfer": "copy"}), "transfer: link"),
        (
            json!({"unit": "db", "method": "dump"}),
            "method: pg_upgrade",
        ),
    ] {
        let m = answer_moving(step, podman_with(15, gb, gb + gb / 2, 17));
        assert_refused_before_stop(&m, &["MB free", "1536 MB", hint]);
    }
    let fits = answer_moving(json!({"unit": "db"}), podman_with(15, gb, gb + gb / 2, 17));
    assert!(
        !fits.out["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("MB free"),
        "{}",
        fits.out
    );
    assert!(
        fits.podman_calls
            .iter()
            .any(|c| c.ends_with("refit-data-step prepare pg_upgrade")),
        "link fits, so the step went on to copy the old cluster: {}",
        fits.out
    );
}

/// A prune of `db` with `keep`, its unit installed on `in_use`, after moves that left `old`
/// (oldest first): its answer and the volumes podman was asked to remove.
fn pruned(keep: u32, in_use: &str, old: &[&str], check: bool) -> (serde_json::Value, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    crate::testing::put_file(
        dir.path(),
        "quadlet/db.container",
        &format!("[Container]\nImage=r/pg:17\nVolume={in_use}:/var/lib/postgresql/data\n"),
    );
    let state = crate::state::StateDir::new(dir.path().join("state"));
    for v in old {
        let place = Place {
            image: "r/pg:15".into(),
            volume: v.to_string(),
        };
        keep::note(&state, "db.container", &place).expect("note");
    }
    let args = json!({
        "steps": [{"unit": "db", "keep": keep}],
        "action": "prune",
        "quadlet_dir": dir.path().join("quadlet"),
        "state_dir": dir.path().join("state"),
        "_ansible_check_mode": check,
    });
    let (podman, systemd) = (FakePodman::default(), FakeSystemd::default());
    let out = respond_on(&spec::SPEC, dir.path(), &args, &systemd, &podman, run_steps).out;
    let removed = podman.calls.lock().expect("calls").clone();
    (out, removed)
}

#[test]
fn prune_removes_the_old_volumes_beyond_keep_oldest_first() {
    let (out, calls) = pruned(1, "pg-17", &["pg-13", "pg-15"], false);
    assert_eq!(calls, vec!["volume remove pg-13"], "{out}");
    assert_eq!(out["changed"], json!(true), "{out}");
    assert_eq!(out["pruned"][0]["kept"], json!(["pg-15"]), "{out}");
    let (out, calls) = pruned(2, "pg-17", &["pg-13", "pg-15"], false);
    assert!(calls.is_empty(), "{calls:?}");
    assert_eq!(out["changed"], json!(false), "{out}");
}

#[test]
fn prune_never_removes_the_volume_the_unit_mounts() {
    // A rollback put the unit back on pg-15 after its move was recorded: it is the data.
    let (out, calls) = pruned(0, "pg-15", &["pg-13", "pg-15"], false);
    assert_eq!(calls, vec!["volume remove pg-13"], "{out}");
}

#[test]
fn prune_in_check_mode_says_what_would_go_and_removes_nothing() {
    let (out, calls) = pruned(0, "pg-17", &["pg-15"], true);
    assert!(calls.is_empty(), "{calls:?}");
    assert_eq!(out["pruned"][0]["removed"], json!(["pg-15"]), "{out}");
}
