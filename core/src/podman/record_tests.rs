use super::{Answers, PodmanRecord, Stores};
use crate::podman::{ContainerInfo, ContainerState, Health, Inspected};
use crate::systemd::UnitStatus;
use std::collections::BTreeMap;
use std::path::Path;

const ID: &str = "c0ffee";

/// podman's stores in a temp dir: the two index files, and one running container's
/// directories with its health log.
struct Bed {
    dir: tempfile::TempDir,
    stores: Stores,
}

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = dir.path().join("graph");
        let run = dir.path().join("run");
        for d in [
            graph.join("overlay-images"),
            graph.join(format!("overlay-containers/{ID}")),
            run.join(format!("overlay-containers/{ID}")),
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let stores = Stores::in_roots(graph, run).expect("one driver");
        let bed = Bed { dir, stores };
        bed.replace("graph/overlay-images/images.json", "[]");
        bed.replace("graph/overlay-images/images.lock", "token1");
        bed.replace("graph/overlay-containers/volatile-containers.json", "[]");
        bed.replace("graph/overlay-containers/containers.lock", "token1");
        bed.health("healthy");
        bed
    }

    /// Writes `rel` as podman's storage does: a new file renamed over the old.
    fn replace(&self, rel: &str, text: &str) {
        let path = self.dir.path().join(rel);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
    }

    fn health(&self, status: &str) {
        let log = format!(r#"{{"Status":"{status}","FailingStreak":0,"Log":[]}}"#);
        self.replace(
            &format!("run/overlay-containers/{ID}/healthcheck.log"),
            &log,
        );
    }

    fn record(&self, units: &[UnitStatus]) -> Option<PodmanRecord> {
        PodmanRecord::of(
            &self.stores,
            self.stores.marks().expect("marks"),
            answers(),
            units,
        )
    }
}

fn answers() -> Answers {
    Answers {
        images: BTreeMap::from([
            (
                "reg/web:1".to_string(),
                Some(Inspected {
                    id: "img1".into(),
                    repo_digests: vec!["reg/web@sha256:d1".into()],
                }),
            ),
            ("reg/web:2".to_string(), None),
        ]),
        containers: vec![ContainerInfo {
            id: ID.into(),
            image_id: "img1".into(),
            revision: Some("r1".into()),
            unit: "web.service".into(),
            state: ContainerState::Running,
            health: Some(Health::Healthy),
            started_at: 1_700_000_000,
        }],
    }
}

fn unit(active: &str, sub: &str, invocation: &str) -> Vec<UnitStatus> {
    let props = [
        ("ActiveState", active),
        ("SubState", sub),
        ("InvocationID", invocation),
    ];
    vec![UnitStatus {
        name: "web.service".into(),
        props: props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }]
}

#[test]
fn a_record_whose_marks_hold_answers_as_podman_did() {
    let bed = Bed::new();
    let up = unit("active", "running", "i1");
    let record = bed.record(&up).expect("a record");
    assert_eq!(record.units(), ["web.service"]);
    assert_eq!(record.adoptable(&bed.stores, &up), Some(answers()));
}

#[test]
fn a_record_survives_its_file() {
    let bed = Bed::new();
    let up = unit("active", "running", "i1");
    let record = bed.record(&up).expect("a record");
    let json = serde_json::to_string(&record).expect("encode");
    let read: PodmanRecord = serde_json::from_str(&json).expect("decode");
    assert_eq!(read, record);
}

#[test]
fn a_changed_store_spoils_the_record() {
    for rel in [
        "graph/overlay-images/images.json",
        "graph/overlay-images/images.lock",
        "graph/overlay-containers/volatile-containers.json",
        "graph/overlay-containers/containers.lock",
        // One absent before: a durable container made since.
        "graph/overlay-containers/containers.json",
    ] {
        let bed = Bed::new();
        let up = unit("active", "running", "i1");
        let record = bed.record(&up).expect("a record");
        // The same text: only the new inode tells, as it does for podman's own writes.
        bed.replace(rel, "[]");
        assert_eq!(record.adoptable(&bed.stores, &up), None, "{rel} replaced");
    }
}

#[test]
fn a_unit_restarted_or_down_spoils_the_record() {
    let bed = Bed::new();
    let record = bed
        .record(&unit("active", "running", "i1"))
        .expect("a record");
    for now in [
        unit("active", "running", "i2"),
        unit("inactive", "dead", "i1"),
        unit("failed", "failed", "i1"),
        unit("activating", "start", "i1"),
        Vec::new(),
    ] {
        assert_eq!(record.adoptable(&bed.stores, &now), None, "{now:?}");
    }
}

#[test]
fn health_is_read_anew_from_podmans_log() {
    let bed = Bed::new();
    let up = unit("active", "running", "i1");
    let record = bed.record(&up).expect("a record");
    bed.health("unhealthy");
    let taken = record.adoptable(&bed.stores, &up).expect("taken");
    assert_eq!(taken.containers[0].health, Some(Health::Unhealthy));
    let log = Path::new("run/overlay-containers")
        .join(ID)
        .join("healthcheck.log");
    std::fs::remove_file(bed.dir.path().join(log)).expect("rm");
    assert_eq!(
        record.adoptable(&bed.stores, &up),
        None,
        "no log, no health"
    );
}

#[test]
fn no_record_of_what_a_later_call_could_not_check() {
    let bed = Bed::new();
    assert!(bed.record(&unit("inactive", "dead", "i1")).is_none());
    assert!(
        bed.record(&[]).is_none(),
        "a unit systemd did not answer for"
    );
    let mut stopped = answers();
    stopped.containers[0].state = ContainerState::parse("exited");
    let up = unit("active", "running", "i1");
    let marks = bed.stores.marks().expect("marks");
    assert!(PodmanRecord::of(&bed.stores, marks.clone(), stopped, &up).is_none());
    let none = Answers {
        containers: Vec::new(),
        ..answers()
    };
    assert!(PodmanRecord::of(&bed.stores, marks, none, &up).is_none());
    // Stores a changed storage.conf left behind do not hold the live container.
    std::fs::remove_dir_all(bed.dir.path().join("run/overlay-containers")).expect("rm");
    assert!(bed.record(&up).is_none());
}

#[test]
fn stores_of_two_drivers_are_not_guessed() {
    let bed = Bed::new();
    let graph = bed.dir.path().join("graph");
    std::fs::create_dir(graph.join("vfs-images")).expect("mkdir");
    assert_eq!(Stores::in_roots(graph, bed.dir.path().join("run")), None);
    assert_eq!(
        Stores::in_roots(bed.dir.path().join("none"), bed.dir.path().join("run")),
        None
    );
}
