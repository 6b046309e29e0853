//! Boot links for template instances. quadlet gives a template no `.wants` link, so without
//! these an instance started by refit would not come back after a reboot. For each `WantedBy=`
//! or `RequiredBy=` target of the template's [Install], every listed instance gets
//! `TARGET.wants/NAME@I.service` (or `.requires`) in the systemd dir; instances no longer
//! listed lose theirs.

use super::Target;
use crate::plan::Wanted;
use crate::podman::is_instance_of;
use std::path::{Path, PathBuf};

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
    for (key, suffix) in [("WantedBy", "wants"), ("RequiredBy", "requires")] {
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
        if !(name.ends_with(".wants") || name.ends_with(".requires")) {
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
