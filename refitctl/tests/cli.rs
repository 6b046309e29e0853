//! refitctl's own command line: exit codes, one clear line for each mistake, and what it
//! makes of a run's events, with a fake ansible-playbook that hands back the events of real
//! runs (tests/fixtures). The runs themselves are tested on the testbed (tests/integration).

use assert_cmd::Command;
use std::path::Path;

fn refitctl(state: &tempfile::TempDir) -> Command {
    let mut cmd = Command::cargo_bin("refitctl").expect("refitctl is built");
    cmd.env("REFITCTL_STATE_DIR", state.path())
        .env("REFITCTL_LOG_DIR", state.path().join("log"))
        // Nothing here may reach a real ansible-playbook.
        .env("REFITCTL_ANSIBLE_PLAYBOOK", "/nonexistent/ansible-playbook");
    cmd
}

/// Records its arguments, prints a progress line, hands back the events of $FAKE_EVENTS as
/// the progress callback would have written them, and exits $FAKE_RC.
const FAKE: &str = r#"#!/bin/sh
printf '%s\n' "$@" > "$FAKE_DIR/args"
echo "   0.1s  th1      fetch    fake progress"
cat "$FAKE_EVENTS" > "$REFIT_EVENTS_FILE"
exit "${FAKE_RC:-0}"
"#;

/// refitctl with the fake ansible-playbook, its events `events` (JSON lines), and a deployment
/// file given.
fn faked(state: &tempfile::TempDir, events: &str) -> Command {
    let dir = state.path();
    let fake = dir.join("ansible-playbook");
    if !fake.exists() {
        std::fs::write(&fake, FAKE).expect("write fake");
        let mut perms = std::fs::metadata(&fake).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&fake, perms).expect("chmod");
        std::fs::write(dir.join("deployment.yml"), "refit_services: []\n").expect("write");
    }
    std::fs::write(dir.join("events.jsonl"), events).expect("write events");
    let mut cmd = refitctl(state);
    cmd.env("REFITCTL_ANSIBLE_PLAYBOOK", &fake)
        .env("FAKE_DIR", dir)
        .env("FAKE_EVENTS", dir.join("events.jsonl"));
    cmd
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("fixture")
}

fn stats(changed: u64, failures: u64) -> String {
    serde_json::json!({"stats": {"th1": {"ok": 3, "changed": changed, "failures": failures,
        "unreachable": 0, "rescued": 0}}})
    .to_string()
}

fn event(phase: &str, action: &str, status: &str, result: serde_json::Value) -> String {
    serde_json::json!({"host": "th1", "task": "t", "phase": phase, "action": action,
        "status": status, "result": result})
    .to_string()
}

fn code(cmd: &mut Command, args: &[&str]) -> Option<i32> {
    cmd.args(args).output().expect("runs").status.code()
}

fn deployment(state: &tempfile::TempDir) -> String {
    state.path().join("deployment.yml").display().to_string()
}

/// stderr, which must be exactly one line.
fn one_line(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    err
}

#[test]
fn command_line_mistakes_exit_64() {
    let state = tempfile::tempdir().expect("tempdir");
    for args in [
        vec![],
        vec!["upgrade"],
        vec!["update", "--frobnicate"],
        vec!["update", "--image-archive", "x.tar"],
    ] {
        let out = refitctl(&state).args(&args).output().expect("runs");
        assert_eq!(out.status.code(), Some(64), "{args:?}: {out:?}");
    }
}

#[test]
fn every_subcommand_help_shows_an_example() {
    let state = tempfile::tempdir().expect("tempdir");
    for sub in ["deploy", "update", "upgrade", "plan", "status", "rollback"] {
        let out = refitctl(&state)
            .args([sub, "--help"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Example:\n  refitctl "), "{sub}: {text}");
    }
    let top = refitctl(&state).arg("--help").output().expect("runs");
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(
        text.contains("0   success, whether or not anything changed"),
        "{text}"
    );
    assert!(text.contains("2   with --detailed-exitcode only"), "{text}");
    assert!(text.contains("4   refused by preflight"), "{text}");
}

#[test]
fn a_missing_deployment_or_inventory_is_one_clear_line() {
    let state = tempfile::tempdir().expect("tempdir");
    let out = refitctl(&state).arg("update").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line(&out).contains("no deployment given: pass --deployment FILE"));

    let out = refitctl(&state)
        .args(["update", "--deployment", "/nonexistent/deployment.yml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line(&out).contains("/nonexistent/deployment.yml does not exist"));

    let deployment = state.path().join("deployment.yml");
    std::fs::write(&deployment, "refit_services: []\n").expect("write");
    let out = refitctl(&state)
        .args(["status", "-i", "/nonexistent/hosts.ini", "--deployment"])
        .arg(&deployment)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line(&out).contains("the inventory /nonexistent/hosts.ini does not exist"));

    let out = refitctl(&state)
        .args(["status", "--deployment"])
        .arg(&deployment)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line(&out).contains("ansible-playbook could not be started"));
    assert!(
        !state.path().join("parameters.json").exists(),
        "a failed run remembers nothing"
    );
}

#[test]
fn a_bad_service_name_is_refused_before_anything_runs() {
    let state = tempfile::tempdir().expect("tempdir");
    let deployment = state.path().join("deployment.yml");
    std::fs::write(&deployment, "refit_services: []\n").expect("write");
    for bad in ["../etc", "a/b", "a\nb"] {
        let out = refitctl(&state)
            .args(["rollback", bad, "--deployment"])
            .arg(&deployment)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        assert!(one_line(&out).contains("is not a unit name"), "{bad:?}");
    }
}

#[test]
fn every_exit_code_with_and_without_detailed_exitcode() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let changed = [
        event(
            "start",
            "refit.containers.container_unit",
            "changed",
            serde_json::json!({"msg": "restarted"}),
        ),
        stats(1, 0),
    ]
    .join("\n");
    let refused = [
        event(
            "preflight",
            "refit.containers.flow_state",
            "failed",
            serde_json::json!({"msg": "no path from 1.0 to 1.3"}),
        ),
        stats(0, 1),
    ]
    .join("\n");
    let failed = [
        event(
            "start",
            "refit.containers.container_unit",
            "failed",
            serde_json::json!({"msg": "did not converge"}),
        ),
        stats(1, 1),
    ]
    .join("\n");
    // (subcommand, events, exit code without, with --detailed-exitcode)
    let cases = [
        (vec!["update"], stats(0, 0), 0, 0),
        (vec!["update"], changed.clone(), 0, 2),
        (
            vec!["update", "--check"],
            fixture("plan-update.jsonl"),
            0,
            2,
        ),
        (vec!["deploy"], changed.clone(), 0, 2),
        (vec!["upgrade", "--to", "1.1"], changed.clone(), 0, 2),
        (vec!["rollback", "content"], changed, 0, 2),
        (vec!["plan"], fixture("plan-update.jsonl"), 0, 2),
        (
            vec!["plan"],
            [
                event(
                    "preflight",
                    "refit.containers.flow_state",
                    "ok",
                    serde_json::json!({"msg": "ok", "lease": "l"}),
                ),
                stats(0, 0),
            ]
            .join("\n"),
            0,
            0,
        ),
        // Reading changes nothing, whatever the modules' check mode said.
        (vec!["status"], fixture("status.jsonl"), 0, 0),
        (vec!["update"], refused.clone(), 4, 4),
        (vec!["plan", "--to", "1.3"], refused, 4, 4),
        (vec!["update"], failed.clone(), 1, 1),
        (vec!["status"], failed, 1, 1),
    ];
    for (args, events, plain, detailed) in cases {
        let mut with = args.clone();
        with.extend(["--deployment", &d]);
        assert_eq!(
            code(&mut faked(&state, &events), &with),
            Some(plain),
            "{with:?}"
        );
        with.push("--detailed-exitcode");
        assert_eq!(
            code(&mut faked(&state, &events), &with),
            Some(detailed),
            "{with:?}"
        );
    }
}

#[test]
fn status_and_plan_json_parse_and_carry_the_units_results() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let out = faked(&state, &fixture("status.jsonl"))
        .args(["status", "--json", "-v", "--deployment", &d])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status is JSON");
    let host = &status[0];
    assert_eq!(host["host"], "th1");
    assert_eq!(host["stream"], "1.1");
    let content = host["services"]
        .as_array()
        .and_then(|s| s.iter().find(|r| r["service"] == "content.service"))
        .expect("content's row");
    assert_eq!(content["pending"], "newer image");
    assert_eq!(
        content["image"].as_str().map(str::len),
        Some(64),
        "full IDs"
    );
    assert_eq!(host["units"].as_array().map(Vec::len), Some(5));
    assert_eq!(host["units"][3]["image"]["newer_available"], true);
    // -v shows the progress, on stderr: stdout is the JSON's.
    assert!(String::from_utf8_lossy(&out.stderr).contains("fake progress"));

    let out = faked(&state, &fixture("plan-update.jsonl"))
        .args(["plan", "--json", "--deployment", &d])
        .output()
        .expect("runs");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan is JSON");
    assert_eq!(plan["changes"], true);
    assert_eq!(
        plan["hosts"][0]["restart"][0],
        "content.service (image_changed)"
    );
    assert_eq!(plan["hosts"][0]["migrate"][0], "content");
    assert_eq!(plan["hosts"][0]["units"][3]["actions"][0], "pull");
}

#[test]
fn diff_shows_each_changed_unit_masked_as_the_module_sent_it() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let diff = serde_json::json!({
        "before": "[Container]\nImage=r/app:1.0\nEnvironment=PW=********\n",
        "after": "[Container]\nImage=r/app:1.1\nEnvironment=PW=********\n",
        "before_header": "/etc/containers/systemd/app.container (on disk)",
        "after_header": "/etc/containers/systemd/app.container (desired)"});
    let events = [
        event(
            "preflight",
            "refit.containers.flow_state",
            "ok",
            serde_json::json!({"msg": "ok", "lease": "l", "diff": [diff.clone()]}),
        ),
        event(
            "fetch",
            "refit.containers.container_unit",
            "changed",
            serde_json::json!({"msg": "written", "diff": diff}),
        ),
        stats(1, 0),
    ]
    .join("\n");
    let out = faked(&state, &events)
        .args(["update", "--check", "--diff", "--deployment", &d])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("th1: diff of /etc/containers/systemd/app.container\n")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("-Image=r/app:1.0\n+Image=r/app:1.1\n Environment=PW=********\n"),
        "{err}"
    );
    let args = std::fs::read_to_string(state.path().join("args")).expect("args");
    assert!(args.lines().any(|a| a == "--diff") && args.lines().any(|a| a == "--check"));

    let out = faked(&state, &events)
        .args(["update", "--deployment", &d])
        .output()
        .expect("runs");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("diff of"),
        "only with --diff"
    );
}

#[test]
fn limit_is_passed_on_and_never_remembered() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let args = || std::fs::read_to_string(state.path().join("args")).expect("args");
    assert_eq!(
        code(
            &mut faked(&state, &stats(0, 0)),
            &["update", "--limit", "th2", "--deployment", &d]
        ),
        Some(0)
    );
    assert!(args().contains("--limit\nth2\n"), "{}", args());
    assert_eq!(
        code(&mut faked(&state, &stats(0, 0)), &["update", "-l", "th*"]),
        Some(0)
    );
    assert!(args().contains("--limit\nth*\n"));
    assert_eq!(code(&mut faked(&state, &stats(0, 0)), &["update"]), Some(0));
    assert!(!args().contains("--limit"), "{}", args());
}

#[test]
fn forget_drops_a_remembered_parameter_and_refuses_an_unknown_name() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let inventory = state.path().join("hosts.ini");
    std::fs::write(&inventory, "th1\n").expect("write");
    let inv = inventory.display().to_string();
    let ok = stats(0, 0);
    let remembered = || -> serde_json::Value {
        let text = std::fs::read_to_string(state.path().join("parameters.json")).expect("params");
        serde_json::from_str(&text).expect("JSON")
    };
    let args = || std::fs::read_to_string(state.path().join("args")).expect("args");
    assert_eq!(
        code(
            &mut faked(&state, &ok),
            &["update", "-i", &inv, "--serial", "2", "--deployment", &d]
        ),
        Some(0)
    );
    assert_eq!(
        (
            remembered()["inventory"].as_str(),
            remembered()["serial"].as_str()
        ),
        (Some(inv.as_str()), Some("2"))
    );

    assert_eq!(
        code(
            &mut faked(&state, &ok),
            &["update", "--forget", "inventory", "--forget", "serial"]
        ),
        Some(0)
    );
    assert_eq!(
        (
            remembered()["inventory"].clone(),
            remembered()["serial"].clone()
        ),
        (serde_json::Value::Null, serde_json::Value::Null)
    );
    assert_eq!(
        remembered()["deployment"].as_str(),
        Some(d.as_str()),
        "the rest stays"
    );
    assert!(
        args().contains("localhost.ini"),
        "the default inventory again: {}",
        args()
    );

    let out = faked(&state, &ok)
        .args(["update", "--forget", "colour"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'colour' for '--forget <PARAM>'"),
        "{err}"
    );
    assert!(
        err.contains("inventory, deployment, offline, image-archive, auth-file, serial, stream"),
        "{err}"
    );
}

#[test]
fn every_run_is_logged_and_the_newest_twenty_are_kept() {
    let state = tempfile::tempdir().expect("tempdir");
    let d = deployment(&state);
    let logs = |dir: &Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .expect("log dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        v.sort();
        v
    };
    let changed = [event("start", "refit.containers.container_unit", "changed",
        serde_json::json!({"msg": "restarted", "restarted_services": ["app.service"], "units": []})), stats(1, 0)].join("\n");
    assert_eq!(
        code(
            &mut faked(&state, &changed),
            &["update", "--deployment", &d]
        ),
        Some(0)
    );
    let log_dir = state.path().join("log");
    let first = logs(&log_dir);
    assert_eq!(first.len(), 1);
    let text = std::fs::read_to_string(&first[0]).expect("log");
    assert!(
        text.starts_with(&format!(
            "refitctl {} update --deployment {d}\nstarted 20",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(
        text.contains(" refit.containers.update -i "),
        "ansible-playbook's command line: {text}"
    );
    assert!(text.contains("fake progress"), "its output: {text}");
    assert!(
        text.contains("\nth1: restarted none; migrated none"),
        "the summary: {text}"
    );
    assert!(
        text.trim_end()
            .lines()
            .last()
            .is_some_and(|l| l.ends_with(": exit 0, changed")),
        "{text}"
    );
    let name = first[0]
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        name.contains("-update-") && name.ends_with(".log"),
        "{name}"
    );

    for _ in 0..21 {
        assert_eq!(code(&mut faked(&state, &stats(0, 0)), &["status"]), Some(0));
    }
    let now = logs(&log_dir);
    assert_eq!(now.len(), 20, "{now:?}");
    assert!(!now.contains(&first[0]), "the oldest went");
}
