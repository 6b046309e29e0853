//! backup.rs's tests: backups taken, listed, restored and pruned through `run`.

use super::*;
use crate::ansible::Invocation;
use crate::migrate::{Params, run};
use crate::testing::{FakeClock, FakePodman, FakeQuadlet, FakeRegistry, FakeSystemd};
use serde_json::json;

struct Bed {
    dir: tempfile::TempDir,
    podman: FakePodman,
}

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = dir.path().join("quadlet");
        std::fs::create_dir_all(&q).expect("mkdir");
        std::fs::write(q.join("api.container"), "[Container]\nImage=pulp:2\n").expect("write");
        let mut podman = FakePodman::default();
        podman.images.insert("pulp:2".into(), "img-2".into());
        Bed { dir, podman }
    }
    fn state(&self) -> StateDir {
        StateDir::new(self.dir.path().join("state"))
    }
    fn stop_record(&self) -> PathBuf {
        self.dir.path().join("state/stops/upgrade.json")
    }
    /// One run_migrations call, as the flow makes it, with `extra` parameters.
    fn call(
        &self,
        extra: serde_json::Value,
    ) -> Result<crate::ansible::Outcome, crate::migrate::MigrateError> {
        let mut a = json!({
            "migrations": [{
                "unit": "api", "command": ["pulpcore-manager", "migrate"],
                "backup": {
                    "image": "pg:17", "network": "host", "stream": "s3_122", "keep": 2,
                    "command": ["pg_dump", "-f", "/backup/db.dump"],
                    "restore_command": ["pg_restore", "/backup/db.dump"],
                },
            }],
            "stop_first": true, "stop_record": "upgrade", "timeout": 5,
            "quadlet_dir": self.dir.path().join("quadlet"),
            "state_dir": self.dir.path().join("state"), "podman_socket": "/none",
        });
        for (k, v) in extra.as_object().expect("object") {
            a[k] = v.clone();
        }
        let p: Params = serde_json::from_value(a).expect("params");
        // Loaded and stopped already: the stop has nothing to wait for, and records the set.
        let mut systemd = FakeSystemd::with_active("api.service", "inv-1");
        if let Some(u) = systemd.units.get_mut("api.service") {
            u.props.insert("ActiveState".into(), "inactive".into());
            u.props.insert("SubState".into(), "dead".into());
        }
        let (registry, clock) = (FakeRegistry::default(), FakeClock::default());
        let host = Host {
            systemd: &systemd,
            podman: &self.podman,
            registry: &registry,
            clock: &clock,
            quadlet: &FakeQuadlet::default(),
        };
        run(p, &Invocation::default(), &host)
    }
    fn commands(&self) -> Vec<String> {
        self.podman
            .oneoffs
            .lock()
            .expect("oneoffs")
            .iter()
            .map(|o| o.command.join(" "))
            .collect()
    }
    /// Stands for the stop record a flow's stop wrote and its finish removes.
    fn set_unfinished(&self, unfinished: bool) {
        if unfinished {
            std::fs::create_dir_all(self.stop_record().parent().expect("dir")).expect("mkdir");
            let record = r#"{"active_before": ["api.service"], "recorded_at": "t"}"#;
            std::fs::write(self.stop_record(), record).expect("write");
        } else {
            let _ = std::fs::remove_file(self.stop_record());
        }
    }
}

#[test]
fn a_pending_migration_is_backed_up_first_into_a_recorded_dir_and_restored_once() {
    let bed = Bed::new();
    let out = bed.call(json!({})).expect("run");
    assert_eq!(
        bed.commands(),
        ["pg_dump -f /backup/db.dump", "pulpcore-manager migrate"]
    );
    let backup_run = bed.podman.oneoffs.lock().expect("oneoffs")[0].clone();
    assert_eq!(backup_run.image, "pg:17");
    assert_eq!(backup_run.network.as_deref(), Some("host"));
    let mount = backup_run.volumes.last().expect("mount").clone();
    assert!(
        mount.ends_with(":/backup") && mount.contains("/backups/s3_122/"),
        "{mount}"
    );
    let dir = mount.trim_end_matches(":/backup").to_string();
    let record: Taken = read_json(&Path::new(&dir).join(RECORD))
        .expect("read")
        .expect("record");
    assert_eq!(
        (record.source.as_str(), record.stream.as_str()),
        ("api.service", "s3_122")
    );
    let data = serde_json::to_value(&out.data).expect("data");
    assert_eq!(data["migrations"][0]["backup"]["dir"], json!(dir), "{data}");

    // The run is unfinished (its stop record is there): the recovery restores, then only once.
    bed.set_unfinished(true);
    let stamp = PathBuf::from(data["migrations"][0]["stamp"].as_str().expect("stamp"));
    assert!(stamp.exists());
    let restored = bed.call(json!({"restore": true})).expect("restore");
    // The schema put back is judged pending again, not skipped by the stamp of the undone one.
    assert!(!stamp.exists());
    assert!(restored.changed, "{}", restored.msg);
    assert_eq!(
        bed.commands().last().map(String::as_str),
        Some("pg_restore /backup/db.dump")
    );
    let again = bed.call(json!({"restore": true})).expect("restore");
    assert!(
        !again.changed && again.msg.contains("no backup to restore"),
        "{}",
        again.msg
    );
    assert_eq!(bed.commands().len(), 3);
}

#[test]
fn a_finished_run_s_backup_is_never_restored_by_a_later_failure() {
    let bed = Bed::new();
    bed.call(json!({})).expect("run");
    // The flow finished: its stop record is gone.
    bed.set_unfinished(false);
    let out = bed.call(json!({"restore": true})).expect("restore");
    assert!(!out.changed, "{}", out.msg);
    // A later run of the same flow stops again, with the old list still on disk: its next
    // backup starts a new list, so only what this run took is restored.
    let list: Vec<Listed> = read_json(&list_path(&bed.state(), "upgrade"))
        .expect("read")
        .unwrap_or_default();
    assert_eq!(list.len(), 1);
    forget_finished(&bed.state(), "upgrade", &bed.stop_record()).expect("forget");
    assert!(!list_path(&bed.state(), "upgrade").exists());
}

#[test]
fn a_failed_backup_stops_the_run_before_the_migration() {
    let mut bed = Bed::new();
    bed.podman.oneoff_rc = 1;
    let err = bed.call(json!({})).expect_err("refused");
    assert!(
        err.to_string()
            .contains("the backup command exited 1, so the migration did not run"),
        "{err}"
    );
    assert_eq!(bed.commands(), ["pg_dump -f /backup/db.dump"]);
}

#[test]
fn each_stream_keeps_its_newest_backups_and_any_a_recovery_may_restore() {
    let bed = Bed::new();
    let stream = bed.dir.path().join("state/backups/s3_122");
    std::fs::create_dir_all(&stream).expect("mkdir");
    let mk = |name: &str| {
        let d = stream.join(name);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(RECORD), "{}").expect("write");
        d
    };
    let (a, b, c) = (
        mk("000000000001-0-api"),
        mk("000000000002-0-api"),
        mk("000000000003-0-api"),
    );
    let listed = Taken {
        source: "api".into(),
        stream: "s3_122".into(),
        dir: a.display().to_string(),
        image: "pg:17".into(),
        volumes: vec![],
        network: None,
        env: vec![],
        restore_command: vec!["r".into()],
        created_at: String::new(),
        duration_ms: 0,
        size_bytes: 0,
    };
    let listed = Listed {
        taken: listed,
        stamp: PathBuf::from("/nonexistent"),
        migration: "api".into(),
    };
    prune(&stream, 1, std::slice::from_ref(&listed)).expect("prune");
    assert!(a.exists() && !b.exists() && c.exists());
}

#[test]
fn bad_backup_parameters_are_refused_by_name() {
    let bed = Bed::new();
    let cases = [
        (
            json!({"command": []}),
            "migrations[0].backup: command is an empty list",
        ),
        (
            json!({"stream": "../x"}),
            "migrations[0].backup: stream \"../x\" is not a plain name",
        ),
        (json!({"keep": 0}), "migrations[0].backup: keep is 0"),
        (
            json!({"secret_env": {"PG=PASSWORD": "x"}}),
            "migrations[0].backup: secret_env.PG=PASSWORD is not a variable name",
        ),
    ];
    for (change, needle) in cases {
        let mut b = json!({
            "image": "pg:17", "command": ["d"], "restore_command": ["r"],
        });
        for (k, v) in change.as_object().expect("object") {
            b[k] = v.clone();
        }
        let err = bed
            .call(json!({"migrations": [{"unit": "api", "command": ["m"], "backup": b}]}))
            .expect_err("refused");
        assert!(err.to_string().contains(needle), "{change}: {err}");
    }
    let err = bed.call(json!({"stop_first": false})).expect_err("refused");
    assert!(err.to_string().contains("backup needs stop_first"), "{err}");
    // Judged before the check container runs, as every other parameter.
    let err = bed
        .call(json!({"stop_record": "../x", "migrations": [{"unit": "api", "command": ["m"], "check_command": ["c"]}]}))
        .expect_err("refused");
    assert!(err.to_string().contains("../x"), "{err}");
    let err = bed
        .call(json!({"migrations": [{"unit": "api", "command": ["m"], "env": {"A=B": "x"}}]}))
        .expect_err("refused");
    assert!(
        err.to_string().contains("env.A=B is not a variable name"),
        "{err}"
    );
    assert!(
        !bed.dir.path().join("state").exists(),
        "a refused call wrote the state dir"
    );
    assert!(bed.commands().is_empty());
}

/// The call's migration with a backup that has a secret and a plain variable.
fn with_secret() -> serde_json::Value {
    json!({"migrations": [{
        "unit": "api", "command": ["pulpcore-manager", "migrate"],
        "backup": {
            "image": "pg:17", "stream": "s3_122",
            "env": {"PGUSER": "pulp-user"}, "secret_env": {"PGPASSWORD": "hunter22"},
            "command": ["pg_dump"], "restore_command": ["pg_restore"],
        },
    }]})
}

#[test]
fn a_backup_s_records_name_its_variables_and_its_dirs_are_root_s_alone() {
    let bed = Bed::new();
    let out = bed.call(with_secret()).expect("run");
    let data = serde_json::to_string(&out.data).expect("data");
    assert!(
        !data.contains("hunter22") && !data.contains("pulp-user"),
        "{data}"
    );
    let backup_env = bed.podman.oneoffs.lock().expect("oneoffs")[0].env.clone();
    assert_eq!(backup_env, ["PGUSER=pulp-user", "PGPASSWORD=hunter22"]);
    let stream = bed.dir.path().join("state/backups/s3_122");
    let dir = std::fs::read_dir(&stream)
        .expect("read")
        .flatten()
        .next()
        .expect("dir")
        .path();
    for file in [dir.join(RECORD), list_path(&bed.state(), "upgrade")] {
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.contains("PGPASSWORD"), "{text}");
        assert!(
            !text.contains("hunter22") && !text.contains("pulp-user"),
            "{text}"
        );
    }
    use std::os::unix::fs::PermissionsExt;
    for d in [bed.dir.path().join("state"), stream.clone(), dir] {
        let mode = std::fs::metadata(&d).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    // The recovery passes the same migrations: the restore gets the values from them.
    bed.set_unfinished(true);
    let mut call = with_secret();
    call["restore"] = json!(true);
    bed.call(call).expect("restore");
    let restore_env = bed
        .podman
        .oneoffs
        .lock()
        .expect("oneoffs")
        .last()
        .expect("one")
        .env
        .clone();
    assert_eq!(restore_env, backup_env);
}

#[test]
fn a_restore_without_the_backup_s_migration_is_refused_by_name() {
    let bed = Bed::new();
    bed.call(with_secret()).expect("run");
    bed.set_unfinished(true);
    let call = json!({"restore": true, "migrations": [{"unit": "api", "command": ["m"]}]});
    let err = bed.call(call).expect_err("refused");
    assert!(
        err.to_string()
            .contains("needs the variables [\"PGUSER\", \"PGPASSWORD\"]"),
        "{err}"
    );
}
