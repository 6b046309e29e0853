//! The units a pending migration of a flow stops besides its own service and what needs it:
//! the other units of the flow's stage that run the same image. They run the code the
//! migration is for, so their new release must not start before it ran, and their old release
//! should not run on the schema it changes. The foremanctl way stops them too, for the whole
//! upgrade; here they stop with the migration, side by side, and start again, each with its new
//! text, the moment its service serves (`start_again::start_again_in_waves`).

use super::params::migrations;
use super::{MigrateError, Migration, Params};
use crate::host::Host;
use crate::state::StateDir;
use crate::unit::UnitName;
use std::collections::BTreeSet;

/// The units of one image a migration stops and starts with its own.
#[derive(Debug, Default)]
pub(super) struct SameImage {
    /// Their services (a template's instances), sorted.
    pub(super) services: Vec<String>,
    /// Their unit files, whose staged text or held image is installed after the migration.
    pub(super) files: Vec<String>,
}

impl SameImage {
    /// Splits `stopped` (a stop record's units) into the two waves a migration stops and
    /// starts: these units with whatever goes down with them or wants them (their sockets, and
    /// a unit that needs both them and the migrated service), and the rest: the migrated
    /// service and what needs it.
    pub(super) fn waves(&self, host: &Host, stopped: &[String]) -> Result<Waves, MigrateError> {
        let going = crate::stop_services::going_with(host.systemd, &self.services)
            .map_err(MigrateError::from)?;
        let (same_image, own) = stopped.iter().cloned().partition(|u| going.contains(u));
        Ok(Waves { own, same_image })
    }
}

/// A migration's stopped units in the two groups it stops and starts one after the other.
#[derive(Debug, Default)]
pub(super) struct Waves {
    /// The migrated service and what needs it: stopped last, started first.
    pub(super) own: Vec<String>,
    /// The other units of its image and what goes with them: stopped first, started once
    /// `own` serves.
    pub(super) same_image: Vec<String>,
}

/// The units of `p.images` that run the image of `m`'s unit, whose new text or image waits in
/// the call's stage (they restart in this run anyway) and that have no migration of their own
/// in the call. Nothing without a stage: outside a flow, a migration stops what it always did.
///
/// Nothing either when another migration of the call runs the same image: the image's units
/// then wait for the start phase, after every migration, so no new code starts between two of
/// them. And a unit ordered after another migration's service (`After=`, `Requires=`,
/// `BindsTo=`) is left to the start phase too: it expects that migration's data.
pub(super) fn units(
    m: &Migration,
    p: &Params,
    state: &StateDir,
    host: &Host,
) -> Result<SameImage, MigrateError> {
    let (Some(stage), Some(unit)) = (&p.stage, &m.unit) else {
        return Ok(SameImage::default());
    };
    let own = UnitName::parse(unit)?;
    let Some(image) = p.images.get(own.stem()) else {
        return Ok(SameImage::default());
    };
    let mut migrated = BTreeSet::new();
    for u in migrations(p).iter().filter_map(|x| x.unit.as_deref()) {
        migrated.insert(UnitName::parse(u)?);
    }
    let shared = migrated
        .iter()
        .any(|n| *n != own && p.images.get(n.stem()) == Some(image));
    if shared {
        return Ok(SameImage::default());
    }
    let staged = state.load_stage(stage)?;
    let mut candidates = Vec::new();
    for (name, other) in &p.images {
        if other != image {
            continue;
        }
        let n = UnitName::parse(name)?;
        let file = n.file_name();
        let restarts = staged.units.contains_key(&file) || staged.held.contains_key(&file);
        // A unit new in this run has no service to stop yet: the start phase starts it.
        let on_host = p.quadlet_dir.join(&file).symlink_metadata().is_ok();
        if migrated.contains(&n) || !restarts || !on_host {
            continue;
        }
        let services: Vec<String> = if n.is_template() {
            let instances = p.instance_names(name)?;
            instances.iter().map(|i| n.instance_service(i)).collect()
        } else {
            vec![n.service()]
        };
        candidates.push((file, services));
    }
    let others: BTreeSet<String> = migrated
        .iter()
        .filter(|n| **n != own)
        .map(UnitName::service)
        .collect();
    let mut out = SameImage::default();
    for (file, services) in candidates {
        if !services.is_empty() && ordered_after_any(host, &services, &others)? {
            continue;
        }
        out.services.extend(services);
        out.files.push(file);
    }
    out.services.sort();
    out.files.sort();
    Ok(out)
}

/// Whether any of `services` is ordered after, or needs, one of `others`.
fn ordered_after_any(
    host: &Host,
    services: &[String],
    others: &BTreeSet<String>,
) -> Result<bool, MigrateError> {
    if others.is_empty() {
        return Ok(false);
    }
    let statuses = host
        .systemd
        .show(services)
        .map_err(crate::stop_services::StopError::from)?;
    Ok(statuses.iter().any(|s| {
        ["After", "Requires", "BindsTo"]
            .iter()
            .flat_map(|k| s.list(k))
            .any(|u| others.contains(&u))
    }))
}
