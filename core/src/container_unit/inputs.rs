//! Inputs from outside a unit's text that its container runs with: the host files named in
//! `restart_on_change` (bind-mounted config files and certificates). A container holds what
//! such a file was when it started, since a file replaced on the host is a new inode the bind
//! mount never sees; so a file modified after the container started means the service runs
//! an old version of it, and the unit is restarted with the reason `file_changed`.

use super::{Target, UnitError};
use crate::plan::Reason;
use std::path::{Path, PathBuf};

/// A file a unit's container depends on, and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInput {
    pub path: PathBuf,
    /// Its modification time, in seconds since the epoch.
    pub changed_at: i64,
}

/// Refuses a `restart_on_change` entry that is not a plain absolute path, before the host is
/// touched.
pub fn check(paths: &[PathBuf]) -> Result<(), UnitError> {
    for p in paths {
        let text = p.to_string_lossy();
        if !p.is_absolute() || text.chars().any(char::is_control) {
            return Err(UnitError::InputPath(text.into_owned()));
        }
    }
    Ok(())
}

/// When each of the target's `restart_on_change` files last changed. A file that is not there
/// is an error: the container would not start without it, or would run without it unseen.
pub fn read(t: &Target) -> Result<Vec<FileInput>, UnitError> {
    t.restart_on_change
        .iter()
        .map(|path| {
            Ok(FileInput {
                path: path.clone(),
                changed_at: modified(path).map_err(|source| UnitError::InputFile {
                    path: path.clone(),
                    source,
                })?,
            })
        })
        .collect()
}

fn modified(path: &Path) -> std::io::Result<i64> {
    let at = std::fs::metadata(path)?.modified()?;
    let since = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(std::io::Error::other)?;
    Ok(i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

/// The reasons a container that started at `started_at` runs with an old input: a file
/// modified in a later second. The same second counts as before: the file a deploy writes just
/// before it starts the service must not restart it at the next run.
pub fn changed(files: &[FileInput], started_at: i64) -> Vec<Reason> {
    if files.iter().any(|f| f.changed_at > started_at) {
        vec![Reason::FileChanged]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::sim::Bed;
    use serde_json::{Value, json};
    use std::time::{Duration, SystemTime};

    const IMAGE: &str = "127.0.0.1:5000/svc:1";

    fn units(settings: &std::path::Path) -> Value {
        json!({"units": [
            {"name": "app", "image": IMAGE, "restart_on_change": [settings]},
            {"name": "db", "image": IMAGE},
        ]})
    }

    #[test]
    fn a_changed_file_restarts_exactly_the_units_that_name_it() {
        let bed = Bed::new(IMAGE, "img-a");
        let settings = bed.dir.path().join("settings.yaml");
        std::fs::write(&settings, "a: 1\n").expect("write");
        assert_eq!(bed.run_unit(units(&settings)).out["failed"], json!(false));
        bed.jobs();
        assert_eq!(bed.run_unit(units(&settings)).out["changed"], json!(false));

        // Changed after the containers started: in a later second than their start.
        std::fs::write(&settings, "a: 2\n").expect("write");
        let later = SystemTime::now() + Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&settings)
            .and_then(|f| f.set_modified(later))
            .expect("set mtime");
        let mut check = units(&settings);
        check["_ansible_check_mode"] = json!(true);
        let out = bed.run_unit(check).out;
        assert_eq!(out["units"][0]["reasons"], json!(["file_changed"]), "{out}");
        assert_eq!(out["units"][1]["reasons"], json!([]), "{out}");
        assert!(bed.jobs().is_empty(), "check mode restarted something");

        // The restart must start in a later second than the file's, as on a real host.
        std::thread::sleep(Duration::from_millis(1100));
        let out = bed.run_unit(units(&settings)).out;
        assert_eq!(out["failed"], json!(false), "{out}");
        assert_eq!(bed.jobs(), vec!["restart app.service".to_string()]);
        assert_eq!(bed.run_unit(units(&settings)).out["changed"], json!(false));
    }

    #[test]
    fn a_relative_or_missing_file_is_refused_naming_the_option() {
        let bed = Bed::new(IMAGE, "img-a");
        let out = bed
            .run_unit(json!({"name": "app", "image": IMAGE, "restart_on_change": ["etc/x"]}))
            .out;
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("restart_on_change: \"etc/x\" is not an absolute path"),
            "{out}"
        );
        assert!(bed.jobs().is_empty());
        assert!(
            !bed.dir.path().join("state").exists(),
            "bad input touched the state dir"
        );

        let gone = bed.dir.path().join("gone.yaml");
        let out = bed
            .run_unit(json!({"name": "app", "image": IMAGE, "restart_on_change": [gone]}))
            .out;
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains("restart_on_change: cannot read"), "{out}");
        assert!(bed.jobs().is_empty());
    }
}
