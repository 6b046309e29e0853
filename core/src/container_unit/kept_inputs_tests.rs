//! A restart for a changed outside input that fails puts back the version that last ran, on
//! the simulated host: another tool's secret, a `restart_on_change` file.

use crate::testing::sim::Bed;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

const IMAGE: &str = "127.0.0.1:5000/svc:1";

fn now() -> i64 {
    let since = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn secret_unit() -> Value {
    let text = format!(
        "[Container]\nImage={IMAGE}\nSecret=settings,type=mount,target=/etc/app/settings.yaml\n"
    );
    json!({"name": "app.container", "content": text})
}

fn file_unit(path: &Path) -> Value {
    json!({"name": "app", "image": IMAGE, "restart_on_change": [path]})
}

fn value(bed: &Bed, name: &str) -> Option<String> {
    bed.sim
        .secret_values
        .lock()
        .expect("values")
        .get(name)
        .cloned()
}

/// The names of refit's copies of secrets podman holds.
fn copies(bed: &Bed) -> Vec<String> {
    let values = bed.sim.secret_values.lock().expect("values");
    let mut names: Vec<String> = values
        .keys()
        .filter(|n| n.starts_with("refit-kept-"))
        .cloned()
        .collect();
    names.sort();
    names
}

/// Writes `text` into `path`, dated a second after now, as another tool's change after the
/// container started; then waits out that second, as a restart on a real host would.
fn change_file(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    let later = SystemTime::now() + Duration::from_secs(1);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(later))
        .expect("set mtime");
    std::thread::sleep(Duration::from_millis(2100));
}

/// A run that failed and rolled back: its message.
fn rolled_back(out: &Value) -> String {
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(true), "{out}");
    out["msg"].as_str().unwrap_or_default().to_string()
}

/// A settings file holding `good: 1`; a container started while it says `bad` exits at once.
fn settings_file(bed: &Bed) -> std::path::PathBuf {
    let settings = bed.dir.path().join("settings.yaml");
    std::fs::write(&settings, "good: 1\n").expect("write");
    let watched = settings.clone();
    bed.sim
        .crash_while(move |_| std::fs::read_to_string(&watched).is_ok_and(|t| t.contains("bad")));
    settings
}

#[test]
fn a_secret_change_that_fails_puts_the_old_value_back_and_runs_on_it() {
    let bed = Bed::new(IMAGE, "img-a");
    bed.sim
        .set_foreign_secret("settings", "good: 1", now() - 60);
    bed.sim.crash_while(|sim| {
        sim.secret_values
            .lock()
            .expect("values")
            .get("settings")
            .is_some_and(|v| v == "bad")
    });
    let out = bed.run_unit(secret_unit()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    let kept = copies(&bed);
    assert_eq!(kept.len(), 1, "one copy of the value that ran: {kept:?}");
    assert_eq!(value(&bed, &kept[0]).as_deref(), Some("good: 1"));
    let state = bed.dir.path().join("state/inputs/app.container.json");
    let record = std::fs::read_to_string(&state).expect("the record");
    assert!(
        !record.contains("good: 1"),
        "a value in the state: {record}"
    );
    let first = bed.sim.running("app.service").expect("runs");
    bed.jobs();

    bed.sim.set_foreign_secret("settings", "bad", now() + 1);
    std::thread::sleep(Duration::from_millis(2100));
    let msg = rolled_back(&bed.run_unit(secret_unit()).out);
    assert!(
        msg.contains("put back the version that last ran of the podman secret settings"),
        "{msg}"
    );
    assert!(!msg.contains("bad") && !msg.contains("good: 1"), "{msg}");
    assert_eq!(value(&bed, "settings").as_deref(), Some("good: 1"));
    assert_eq!(
        bed.sim.running("app.service"),
        Some(first.clone()),
        "the service runs the same revision again, on the old value"
    );
    assert_eq!(bed.run_unit(secret_unit()).out["changed"], json!(false));

    // A good change converges, and its value is what is kept from then on.
    bed.sim.set_foreign_secret("settings", "good: 2", now() + 1);
    std::thread::sleep(Duration::from_millis(2100));
    let out = bed.run_unit(secret_unit()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    let kept = copies(&bed);
    assert_eq!(kept.len(), 1, "the older copy went: {kept:?}");
    assert_eq!(value(&bed, &kept[0]).as_deref(), Some("good: 2"));
    assert_eq!(bed.run_unit(secret_unit()).out["changed"], json!(false));
}

#[test]
fn a_file_change_that_fails_puts_the_old_file_back_with_its_mode() {
    let bed = Bed::new(IMAGE, "img-a");
    let settings = settings_file(&bed);
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    assert_eq!(
        bed.run_unit(file_unit(&settings)).out["failed"],
        json!(false)
    );
    let kept_dir = bed.dir.path().join("state/inputs/app.container.d");
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&kept_dir), 0o700);
    let kept: Vec<_> = std::fs::read_dir(&kept_dir)
        .expect("copies")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(mode(&kept[0]), 0o600);
    let first = bed.sim.running("app.service").expect("runs");

    change_file(&settings, "bad\n");
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let msg = rolled_back(&bed.run_unit(file_unit(&settings)).out);
    assert!(
        msg.contains("put back the version that last ran of the file"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        "good: 1\n"
    );
    assert_eq!(mode(&settings), 0o640, "its mode as it ran");
    assert_eq!(bed.sim.running("app.service"), Some(first));
    assert_eq!(
        bed.run_unit(file_unit(&settings)).out["changed"],
        json!(false)
    );

    change_file(&settings, "good: 2\n");
    assert_eq!(
        bed.run_unit(file_unit(&settings)).out["failed"],
        json!(false)
    );
    let kept: Vec<_> = std::fs::read_dir(&kept_dir)
        .expect("copies")
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1, "the older copy went");
    assert_eq!(
        bed.run_unit(file_unit(&settings)).out["changed"],
        json!(false)
    );

    // Without restart_on_change the unit keeps nothing.
    let plain = json!({"name": "app", "image": IMAGE});
    assert_eq!(bed.run_unit(plain).out["failed"], json!(false));
    assert!(!kept_dir.join(kept[0].file_name()).exists());
    assert!(
        !bed.dir
            .path()
            .join("state/inputs/app.container.json")
            .exists()
    );
}

#[test]
fn a_change_refit_kept_no_earlier_version_of_says_so_and_changes_nothing() {
    let bed = Bed::new(IMAGE, "img-a");
    let settings = settings_file(&bed);
    assert_eq!(
        bed.run_unit(file_unit(&settings)).out["failed"],
        json!(false)
    );
    // As after a takeover: nothing kept yet.
    std::fs::remove_dir_all(bed.dir.path().join("state/inputs")).expect("rm");

    change_file(&settings, "bad\n");
    let out = bed.run_unit(file_unit(&settings)).out;
    assert_eq!(out["failed"], json!(true), "{out}");
    assert_eq!(out["rolled_back"], json!(false), "{out}");
    let msg = out["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("refit keeps no version of it that ran")
            && msg.contains("put it back with the tool that changed it"),
        "{msg}"
    );
    assert_eq!(std::fs::read_to_string(&settings).expect("read"), "bad\n");
}
