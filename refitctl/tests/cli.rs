//! refitctl's own command line, before any playbook runs: exit codes, and one clear line for
//! each mistake. The runs themselves are tested on the testbed (tests/integration).

use assert_cmd::Command;

fn refitctl(state: &tempfile::TempDir) -> Command {
    let mut cmd = Command::cargo_bin("refitctl").expect("refitctl is built");
    cmd.env("REFITCTL_STATE_DIR", state.path())
        // Nothing here may reach a real ansible-playbook.
        .env("REFITCTL_ANSIBLE_PLAYBOOK", "/nonexistent/ansible-playbook");
    cmd
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
    assert!(String::from_utf8_lossy(&top.stdout).contains("4   refused by preflight"));
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
