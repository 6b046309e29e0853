//! Inputs from outside a unit's text that its container runs with:
//! - the host files named in `restart_on_change` (bind-mounted config files and certificates).
//!   A container holds what such a file was when it started, since a file replaced on the
//!   host is a new inode the bind mount never sees;
//! - the podman secrets its `Secret=` lines name that refit did not create (another tool's
//!   `settings.yaml` mounted with `type=mount`, say). A container holds the value it started
//!   with; podman records when a secret's value was last set.
//!
//! An input set after the container started means the service runs an old version of it: the
//! unit is restarted with the reason `file_changed` or `secret_changed`. No value is read here:
//! `kept_inputs` reads them once a run converged, to keep the version that ran.

use super::{Host, Target, UnitError};
use crate::plan::Reason;
use crate::unit::UnitFile;
use std::path::{Path, PathBuf};

/// Where an input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputSource {
    File(PathBuf),
    Secret(String),
}

/// An input a unit's container depends on, and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub source: InputSource,
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

/// The target's inputs, with when each last changed. A file or a secret that is not there is
/// an error: the container would not start without it, or would run without it unseen.
pub fn read(host: &Host, t: &Target) -> Result<Vec<Input>, UnitError> {
    let mut inputs = t
        .restart_on_change
        .iter()
        .map(|path| {
            Ok(Input {
                source: InputSource::File(path.clone()),
                changed_at: modified(path).map_err(|source| UnitError::InputFile {
                    path: path.clone(),
                    source,
                })?,
            })
        })
        .collect::<Result<Vec<_>, UnitError>>()?;
    let names = foreign_secrets(t);
    if names.is_empty() {
        return Ok(inputs);
    }
    let held = host.podman.secrets()?;
    for name in names {
        let found =
            held.iter()
                .find(|s| s.name == name)
                .ok_or_else(|| UnitError::SecretMissing {
                    unit: t.name.file_name(),
                    secret: name.clone(),
                })?;
        // A podman too old to say when a value was set cannot tell a change: no reason then.
        if let Some(changed_at) = found.updated_at {
            inputs.push(Input {
                source: InputSource::Secret(name),
                changed_at,
            });
        }
    }
    Ok(inputs)
}

/// The secrets the unit's text and drop-ins name that refit does not create (`secret_env`'s
/// own are named after their value, so a new value is already a new text).
fn foreign_secrets(t: &Target) -> Vec<String> {
    let Some(desired) = &t.desired else {
        return Vec::new();
    };
    let dropins = t
        .dropins
        .iter()
        .filter_map(|d| UnitFile::parse(&d.text).ok());
    let mut names: Vec<String> = std::iter::once(desired.unit.clone())
        .chain(dropins)
        .flat_map(|u| {
            super::secret_names::named(&u)
                .map(|n| n.trim().trim_matches('"').to_string())
                .collect::<Vec<_>>()
        })
        .filter(|n| !n.is_empty() && !super::secret_names::is_refits(n))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// When `path` last changed, in seconds since the epoch.
pub(super) fn modified(path: &Path) -> std::io::Result<i64> {
    let at = std::fs::metadata(path)?.modified()?;
    let since = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(std::io::Error::other)?;
    Ok(i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

/// The reasons a container that started at `started_at` runs with an old input: one set in a
/// later second. The same second counts as before: the file a deploy writes just before it
/// starts the service must not restart it at the next run.
pub fn changed(inputs: &[Input], started_at: i64) -> Vec<Reason> {
    let mut reasons = Vec::new();
    for input in inputs.iter().filter(|i| i.changed_at > started_at) {
        let reason = match input.source {
            InputSource::File(_) => Reason::FileChanged,
            InputSource::Secret(_) => Reason::SecretChanged,
        };
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    reasons
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

    fn secret_units() -> Value {
        let mounted = format!(
            "[Container]\nImage={IMAGE}\nSecret=settings,type=mount,target=/etc/app/settings.yaml\n"
        );
        json!({"units": [
            {"name": "app.container", "content": mounted},
            {"name": "db", "image": IMAGE},
        ]})
    }

    fn set_secret(bed: &Bed, updated_at: i64) {
        bed.sim.set_foreign_secret("settings", "a: 1", updated_at);
    }

    fn now() -> i64 {
        let since = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
        since.map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    }

    #[test]
    fn a_secret_another_tool_replaced_restarts_exactly_its_users() {
        let bed = Bed::new(IMAGE, "img-a");
        set_secret(&bed, now() - 60);
        assert_eq!(bed.run_unit(secret_units()).out["failed"], json!(false));
        bed.jobs();
        assert_eq!(bed.run_unit(secret_units()).out["changed"], json!(false));

        set_secret(&bed, now() + 1);
        let mut check = secret_units();
        check["_ansible_check_mode"] = json!(true);
        let out = bed.run_unit(check).out;
        assert_eq!(
            out["units"][0]["reasons"],
            json!(["secret_changed"]),
            "{out}"
        );
        assert_eq!(out["units"][1]["reasons"], json!([]), "{out}");
        assert!(bed.jobs().is_empty(), "check mode restarted something");

        std::thread::sleep(Duration::from_millis(2100));
        let out = bed.run_unit(secret_units()).out;
        assert_eq!(out["failed"], json!(false), "{out}");
        assert_eq!(bed.jobs(), vec!["restart app.service".to_string()]);
        assert_eq!(bed.run_unit(secret_units()).out["changed"], json!(false));
    }

    #[test]
    fn a_missing_secret_of_another_tool_is_refused_before_anything_changes() {
        let bed = Bed::new(IMAGE, "img-a");
        let out = bed.run_unit(secret_units()).out;
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("app.container names the podman secret settings, which does not exist"),
            "{out}"
        );
        assert!(bed.jobs().is_empty());
        assert!(!bed.dir.path().join("quadlet/app.container").exists());
    }
}
