//! A broken deployment file stops refitctl before ansible-playbook starts, in one line that
//! names the file, the line and the column.

use assert_cmd::Command;

#[test]
fn a_broken_deployment_is_one_line_and_nothing_runs() {
    let state = tempfile::tempdir().expect("tempdir");
    let dir = state.path();
    // An ansible-playbook that leaves a mark if it is ever started.
    let fake = dir.join("ansible-playbook");
    std::fs::write(&fake, "#!/bin/sh\ntouch \"$0.started\"\n").expect("write");
    let mut perms = std::fs::metadata(&fake).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).expect("chmod");
    let deployment = dir.join("deployment.yml");
    for (text, expected) in [
        (
            "refit_streams: [\"1.0\", \"1.1\"\nrefit_services: []\n",
            ":2:1: did not find expected ',' or ']'",
        ),
        (
            "refit_services:\n  - name: db\n    imgae: x\n",
            ":3:5: refit_services[0]: unknown key `imgae` in a service entry (did you mean `image`?)",
        ),
    ] {
        std::fs::write(&deployment, text).expect("write");
        let out = Command::cargo_bin("refitctl")
            .expect("refitctl is built")
            .env("REFITCTL_STATE_DIR", dir)
            .env("REFITCTL_LOG_DIR", dir.join("log"))
            .env("REFITCTL_ANSIBLE_PLAYBOOK", &fake)
            .args(["update", "--deployment"])
            .arg(&deployment)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
        let place = format!("refitctl: failed: {}{expected}", deployment.display());
        assert!(err.starts_with(&place), "{err}");
        assert!(!dir.join("ansible-playbook.started").exists());
        assert!(!dir.join("parameters.json").exists(), "nothing remembered");
    }
}
