//! `refitctl --version` names the collection ansible-playbook will run, and where it is.

use std::path::Path;
use std::process::Command;

/// refitctl copied out of the checkout, so the collection can only come from the collections
/// path given.
fn outside_the_checkout(dir: &Path) -> std::path::PathBuf {
    let copy = dir.join("refitctl");
    std::fs::copy(assert_cmd::cargo::cargo_bin("refitctl"), &copy).expect("copy refitctl");
    copy
}

fn version(exe: &Path, collections: &Path) -> String {
    let out = Command::new(exe)
        .arg("--version")
        .env("ANSIBLE_COLLECTIONS_PATH", collections)
        .output()
        .expect("runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn version_names_the_installed_collection_or_says_it_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = outside_the_checkout(dir.path());
    let paths = dir.path().join("collections");
    let text = version(&exe, &paths);
    assert!(
        text.starts_with(&format!("refitctl {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "collection refit.containers: not installed in {}",
            paths.display()
        )),
        "{text}"
    );

    let installed = paths.join("ansible_collections/refit/containers");
    std::fs::create_dir_all(&installed).expect("mkdir");
    std::fs::write(
        installed.join("MANIFEST.json"),
        r#"{"collection_info": {"namespace": "refit", "name": "containers", "version": "9.8.7"}}"#,
    )
    .expect("write");
    let text = version(&exe, &paths);
    assert!(
        text.contains(&format!(
            "collection refit.containers 9.8.7, installed in {}",
            installed.display()
        )),
        "{text}"
    );
}
