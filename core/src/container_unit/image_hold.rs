//! Holding a rollback behind an `.image` unit across a reboot.
//!
//! quadlet's service for an `.image` unit pulls its tag at every boot, before the containers
//! that run it start. After refit rolled such a container back (its tag pointed at the image
//! that ran before), a reboot would pull the tag again and start the release that failed. While
//! a rollback holds, refit keeps a drop-in of its own beside the `.image` unit: its service
//! points the tag back at the rolled-back image right after the pull, so the containers start
//! that image. The next run that pulls the tag from the registry and converges lifts the hold.
//! The drop-in is no part of the unit's revision (`unit::dropins::ROLLBACK_HOLD`).

use super::work::Work;
use super::{Host, PullPolicy, UnitError};
use crate::plan::Wanted;
use crate::state::{StateError, atomic_write, io_err, remove_file};
use crate::unit::dropins::ROLLBACK_HOLD;
use std::path::{Path, PathBuf};

/// The `.image` unit whose tag a target runs, when it runs one: as the run resolved it, or
/// for a revision taken from history (a rollback), as its text names it.
fn image_unit(w: &Work) -> Option<String> {
    let d = w.target.desired.as_ref()?;
    d.image_unit
        .clone()
        .or_else(|| Some(d.unit.value("Container", "Image")?.to_string()))
        .filter(|u| u.ends_with(".image"))
}

/// After a run that converged: a target rolled back on request (`state: rolled_back`) holds
/// its `.image` unit's tag on the image it went back to; a target that converged on what the
/// registry's tag names now (the run pulled, `pull: always`) lifts the hold; so does an
/// `.image` unit the run removed. Reloads systemd once when a hold changed, so the next boot
/// runs the `.image` service as the hold says. Notes the change in each target's actions.
pub fn after_run(
    host: &Host,
    work: &mut [Work],
    quadlet_dir: &Path,
    pull: PullPolicy,
) -> Result<(), UnitError> {
    let mut changed = false;
    for w in work.iter_mut() {
        if w.target.name.kind() == crate::unit::Kind::Image && w.target.wanted == Wanted::Absent {
            changed |= lift(quadlet_dir, &w.target.name.file_name())?;
            continue;
        }
        let Some(unit) = image_unit(w) else {
            continue;
        };
        if w.target.wanted == Wanted::RolledBack {
            let (Some(d), Some(id)) = (&w.target.desired, &w.observed.image_id) else {
                continue;
            };
            let Some(image) = &d.image else { continue };
            hold(
                quadlet_dir,
                &unit,
                &w.target.name.file_name(),
                image.as_str(),
                id,
            )?;
            w.report.result.actions.push("hold_image_tag".into());
            w.report.changed = true;
            changed = true;
        } else if pull == PullPolicy::Always && lift(quadlet_dir, &unit)? {
            w.report.result.actions.push("lift_image_hold".into());
            w.report.changed = true;
            changed = true;
        }
    }
    if changed {
        host.systemd.daemon_reload()?;
    }
    Ok(())
}

/// Where the hold of the `.image` unit `image_unit` lives in `quadlet_dir`.
pub fn path(quadlet_dir: &Path, image_unit: &str) -> PathBuf {
    quadlet_dir
        .join(format!("{image_unit}.d"))
        .join(ROLLBACK_HOLD)
}

/// The hold's text: after the boot's pull, `image` names `image_id` again.
fn text(image_unit: &str, container: &str, image: &str, image_id: &str) -> String {
    format!(
        "# Written by refit: {container} was rolled back to image {image_id}, which {image} named\n\
         # before. {image_unit} pulls {image} at every boot; this points it back at that image\n\
         # until a refit run that pulls {image} converges, which removes this file.\n\
         [Service]\n\
         ExecStartPost=podman image tag {image_id} {image}\n"
    )
}

/// Holds `image_unit`'s tag `image` on `image_id` at boot, for the container `container`
/// rolled back to it. The caller reloads systemd.
pub fn hold(
    quadlet_dir: &Path,
    image_unit: &str,
    container: &str,
    image: &str,
    image_id: &str,
) -> Result<(), StateError> {
    let file = path(quadlet_dir, image_unit);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    }
    atomic_write(
        &file,
        text(
            image_unit,
            container,
            image,
            &crate::podman::bare_id(image_id),
        )
        .as_bytes(),
        0o644,
    )
}

/// Lifts the hold of `image_unit`; true when there was one (the caller then reloads systemd).
/// The drop-in directory goes too when the hold was all it held.
pub fn lift(quadlet_dir: &Path, image_unit: &str) -> Result<bool, StateError> {
    let file = path(quadlet_dir, image_unit);
    if !remove_file(&file)? {
        return Ok(false);
    }
    if let Some(dir) = file.parent() {
        // Not empty: the unit has drop-ins of its own, which stay.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::put_file;
    use crate::unit::dropins;

    #[test]
    fn a_hold_points_the_tag_back_after_the_pull_and_lifts_cleanly() {
        let q = tempfile::tempdir().expect("tmp");
        hold(
            q.path(),
            "app.image",
            "web.container",
            "reg/app:stable",
            "abc123",
        )
        .expect("holds");
        let text = std::fs::read_to_string(path(q.path(), "app.image")).expect("written");
        assert!(text.contains("[Service]\nExecStartPost=podman image tag abc123 reg/app:stable\n"));
        assert!(lift(q.path(), "app.image").expect("lifts"));
        assert!(!q.path().join("app.image.d").exists());
        assert!(!lift(q.path(), "app.image").expect("nothing to lift"));
    }

    #[test]
    fn the_hold_is_no_part_of_the_revision_and_the_units_own_drop_ins_stay() {
        let q = tempfile::tempdir().expect("tmp");
        put_file(
            q.path(),
            "app.image.d/10-auth.conf",
            "[Image]\nTLSVerify=false\n",
        );
        let before = dropins::read(q.path(), "app.image").expect("reads");
        hold(q.path(), "app.image", "web.container", "reg/app:1", "abc").expect("holds");
        assert_eq!(dropins::read(q.path(), "app.image").expect("reads"), before);
        assert!(lift(q.path(), "app.image").expect("lifts"));
        assert!(q.path().join("app.image.d/10-auth.conf").exists());
    }
}
