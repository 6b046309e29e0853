//! Broken deployment files, and what refitctl says about them before ansible-playbook runs.

use super::{DeploymentError, check, distance};
use std::path::Path;

/// The message for `text` written as `deployment.yml`, with the temp dir's path made stable.
fn message(text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("deployment.yml");
    std::fs::write(&path, text).expect("write");
    let e = check(&path).expect_err("refused");
    e.to_string()
        .replace(&dir.path().display().to_string(), "DIR")
}

const GOOD: &str = r#"---
refit_registry: 127.0.0.1:5000
__common: &common
  network: host
  health_interval: 5s
refit_services:
  - <<: *common
    name: db
    image: "{{ refit_registry }}/db:1.0"
    env: {PORT: "1"}
  - name: worker@
    image_ref: "{{ refit_registry }}/worker:1.0"
    instances: [1, 2]
    secret_env: !unsafe {TOKEN: "{{ not jinja }}"}
refit_migrations: []
"#;

#[test]
fn a_good_file_passes_with_anchors_aliases_and_tags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("deployment.yml");
    std::fs::write(&path, GOOD).expect("write");
    check(&path).expect("a good file passes");
}

#[test]
fn a_jinja_services_list_or_an_empty_file_is_left_to_ansible() {
    for text in ["refit_services: \"{{ my_services }}\"\n", "", "---\n"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("deployment.yml");
        std::fs::write(&path, text).expect("write");
        check(&path).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

#[test]
fn a_yaml_syntax_error_names_the_file_line_column_and_what_was_expected() {
    let text = "refit_stream: \"1.0\"\nrefit_streams: [\"1.0\", \"1.1\"\nrefit_services: []\n";
    let m = message(text);
    assert!(m.starts_with("DIR/deployment.yml:3:"), "{m}");
    assert!(m.contains("expected ',' or ']'"), "{m}");
    insta::assert_snapshot!(m);
}

#[test]
fn an_unknown_key_names_the_entry_and_the_nearest_known_key() {
    let text = "refit_services:\n  - name: db\n    image: x\n  - name: app\n    image: y\n    helth_cmd: true\n";
    let m = message(text);
    assert!(m.starts_with("DIR/deployment.yml:"), "{m}");
    assert!(m.contains("refit_services[1]"), "{m}");
    assert!(m.contains("did you mean `health_cmd`?"), "{m}");
    insta::assert_snapshot!(m);
}

#[test]
fn an_unknown_key_in_a_merged_anchor_is_found_too() {
    let text = "c: &c\n  netwrk: host\nrefit_services:\n  - <<: *c\n    name: db\n";
    assert!(message(text).contains("did you mean `network`?"));
}

#[test]
fn a_key_far_from_every_known_one_lists_them_all() {
    let m = message("refit_services:\n  - name: db\n    replicas: 3\n");
    assert!(m.contains("unknown key `replicas`"), "{m}");
    assert!(m.contains("takes name, image, exec,"), "{m}");
}

#[test]
fn a_wrong_shape_says_what_was_expected() {
    let m = message("refit_services: {db: {image: x}}\n");
    assert!(m.contains("expected a list of service entries"), "{m}");
    let m = message("- just\n- a list\n");
    assert!(m.contains("expected a mapping of variables"), "{m}");
}

#[test]
fn a_file_that_cannot_be_read_says_so() {
    let e = check(Path::new("/nonexistent/deployment.yml")).expect_err("refused");
    assert!(matches!(e, DeploymentError::Read { .. }));
    assert!(
        e.to_string()
            .contains("check the path given to --deployment")
    );
}

#[test]
fn distance_counts_edits() {
    assert_eq!(distance("helth_cmd", "health_cmd"), 1);
    assert_eq!(distance("imgae", "image"), 2);
    assert_eq!(distance("", "env"), 3);
    assert_eq!(distance("env", "env"), 0);
}

#[test]
fn the_repositorys_deployment_files_pass() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in [
        "examples/foreman-like/deployment.yml",
        "examples/pulp/deployment.yml",
        "tests/integration/vars/fleet_deployment.yml",
    ] {
        check(&repo.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}
