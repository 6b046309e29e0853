//! A flow's stage (`state::stage`) as migrations see it: a migrated unit's new text waits in the
//! stage, so its one-off container is made from that text (the env and volumes the new release
//! runs with), and the text is installed into the quadlet dir once the migration succeeded,
//! just before its service starts again. Until then a boot starts the old text on the old data;
//! from then on, the new text on the migrated data. A new image under the tag the unit already
//! names is held off that tag the same way (`state::Held`): the migration runs it by ID, and
//! its install moves the tag.

use super::{MigrateError, Migration, Params};
use crate::host::Host;
use crate::state::{Held, Installed, StateDir};
use crate::unit::UnitName;

/// The unit file a migration borrows from, if it names a unit.
fn unit_file(m: &Migration) -> Result<Option<String>, MigrateError> {
    m.unit
        .as_deref()
        .map(|u| Ok(UnitName::parse(u)?.file_name()))
        .transpose()
}

/// The staged text of the migration's unit, when the call names a stage that holds one.
pub fn text(m: &Migration, p: &Params, state: &StateDir) -> Result<Option<String>, MigrateError> {
    let (Some(name), Some(file)) = (&p.stage, unit_file(m)?) else {
        return Ok(None);
    };
    Ok(state.load_stage(name)?.units.remove(&file).map(|s| s.text))
}

/// The new image the flow's preflight held off the tag the migration's unit names, if any: the
/// image the migration is for, which the tag names only once the unit is installed.
pub fn held(m: &Migration, p: &Params, state: &StateDir) -> Result<Option<Held>, MigrateError> {
    let (Some(name), Some(file)) = (&p.stage, unit_file(m)?) else {
        return Ok(None);
    };
    Ok(state.load_stage(name)?.held.remove(&file))
}

/// True when the migration's unit is new in this run: its text is staged and no file of it is
/// in the quadlet dir yet, so systemd has no such service to stop (a first deploy).
pub fn only_staged(m: &Migration, p: &Params, state: &StateDir) -> Result<bool, MigrateError> {
    let Some(file) = unit_file(m)? else {
        return Ok(false);
    };
    let on_disk = p.quadlet_dir.join(&file).symlink_metadata().is_ok();
    Ok(!on_disk && text(m, p, state)?.is_some())
}

/// Installs the staged texts of the migrated unit and of `also` (the units of its image it
/// stopped: `same_image`), reloads systemd once, and moves their held images onto their tags;
/// true when it changed any.
pub fn install(
    m: &Migration,
    also: &[String],
    p: &Params,
    host: &Host,
    state: &StateDir,
) -> Result<bool, MigrateError> {
    let mut files: Vec<String> = unit_file(m)?.into_iter().collect();
    files.extend(also.iter().cloned());
    install_files(&files, p, host, state)
}

/// Installs the staged texts of unit files, with one reload of systemd after them all, and
/// moves their held images onto their tags; true when it changed any. Nothing without a stage.
fn install_files(
    files: &[String],
    p: &Params,
    host: &Host,
    state: &StateDir,
) -> Result<bool, MigrateError> {
    let Some(name) = &p.stage else {
        return Ok(false);
    };
    let mut held = state.load_stage(name)?.held;
    let (mut moved, mut written) = (false, false);
    for file in files {
        if let Some(h) = held.remove(file) {
            moved |= crate::podman::point_tag(host.podman, &h.image, &h.id)?;
        }
        written |= state.install_staged(name, &p.quadlet_dir, file)? == Installed::Written;
    }
    if written {
        host.systemd.daemon_reload()?;
    }
    Ok(moved || written)
}
