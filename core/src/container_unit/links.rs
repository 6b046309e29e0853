//! Boot links for template instances. quadlet gives a template no `.wants` link, so without
//! these an instance started by refit would not come back after a reboot. For each `WantedBy=`
//! or `RequiredBy=` target of the template's [Install], every listed instance gets
//! `TARGET.wants/NAME@I.service` (or `.requires`) in the systemd dir; instances no longer
//! listed lose theirs.

use super::{Target, UnitError};
use crate::plan::Wanted;
use crate::podman::is_instance_of;
use crate::unit::UnitFile;
use crate::unit::name::validate_systemd_unit;
use std::path::{Path, PathBuf};

/// The [Install] keys whose values become boot-link dirs.
const LINK_KEYS: [(&str, &str); 2] = [("WantedBy", "wants"), ("RequiredBy", "requires")];

/// Every `WantedBy=` and `RequiredBy=` word must be a unit name: it is joined into a path, so
/// `../..` would put links outside the systemd dir.
pub fn check_install(unit: &UnitFile) -> Result<(), UnitError> {
    for (key, _) in LINK_KEYS {
        for value in unit.values("Install", key).flat_map(str::split_whitespace) {
            let is_unit = validate_systemd_unit(value).is_ok()
                && value
                    .rsplit_once('.')
                    .is_some_and(|(stem, _)| !stem.is_empty());
            if !is_unit {
                return Err(UnitError::BadInstall {
                    key,
                    value: value.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Makes the dir of a boot link, refusing one that is a symlink: links go only where the
/// systemd dir says, never where a planted symlink points.
pub fn ensure_link_dir(link: &Path) -> Result<(), UnitError> {
    let Some(dir) = link.parent() else {
        return Ok(());
    };
    if dir
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(crate::state::StateError::Symlink(dir.to_path_buf()).into());
    }
    std::fs::create_dir_all(dir).map_err(crate::state::io_err("create", dir))?;
    Ok(())
}

/// Where quadlet writes the generated units the links point at.
const GENERATOR_DIR: &str = "/run/systemd/generator";

/// The links the target should have.
pub fn wanted(t: &Target, systemd_dir: &Path) -> Vec<PathBuf> {
    let Some(d) = &t.desired else {
        return Vec::new();
    };
    if !t.name.is_template() || t.wanted == Wanted::Absent {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (key, suffix) in LINK_KEYS {
        for target in d
            .unit
            .values("Install", key)
            .flat_map(str::split_whitespace)
        {
            for i in &t.instances {
                out.push(
                    systemd_dir
                        .join(format!("{target}.{suffix}"))
                        .join(t.name.instance_service(i)),
                );
            }
        }
    }
    out.sort();
    out
}

/// The instance links of this template that exist now, in any `.wants` or `.requires` dir.
pub fn existing(t: &Target, systemd_dir: &Path) -> Vec<PathBuf> {
    if !t.name.is_template() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(systemd_dir) else {
        return out;
    };
    for dir in dirs.flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        // A symlinked dir is not refit's to clean: its links live somewhere else.
        let real_dir = dir.file_type().is_ok_and(|f| f.is_dir());
        if !real_dir || !(name.ends_with(".wants") || name.ends_with(".requires")) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for e in entries.flatten() {
            let unit = e.file_name().to_string_lossy().into_owned();
            let is_link = e.file_type().is_ok_and(|f| f.is_symlink());
            if is_link && is_instance_of(&unit, t.name.stem()) {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// What the link of one instance points at: the template quadlet generates.
pub fn link_target(t: &Target) -> PathBuf {
    Path::new(GENERATOR_DIR).join(t.name.service())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_targets_must_be_unit_names() {
        let ok = UnitFile::parse("[Install]\nWantedBy=multi-user.target default.target\n")
            .expect("parses");
        assert!(check_install(&ok).is_ok());
        for bad in ["../../etc", "a/b.target", "multi-user", ".target"] {
            let u = UnitFile::parse(&format!("[Install]\nWantedBy={bad}\n")).expect("parses");
            assert!(
                matches!(check_install(&u), Err(UnitError::BadInstall { .. })),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn a_symlinked_wants_dir_is_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("dir");
        let wants = d.path().join("multi-user.target.wants");
        std::os::unix::fs::symlink(&elsewhere, &wants).expect("link");
        let err = ensure_link_dir(&wants.join("worker@1.service")).expect_err("refused");
        assert!(err.to_string().contains("is a symlink"), "{err}");
        let real = d.path().join("default.target.wants");
        ensure_link_dir(&real.join("worker@1.service")).expect("a plain dir is made");
        assert!(real.is_dir());
    }
}
