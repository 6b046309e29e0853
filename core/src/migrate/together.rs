//! Which migrations may run at once. A migration stops its service and every unit that needs
//! it, migrates, and starts them again. Two whose stop sets share a unit would stop and start
//! it under each other, and a service ordered after another's (After=, Before=, Requires=,
//! BindsTo=) expects that one's data first: in both cases the later one waits for the earlier,
//! so dependent migrations keep the order given. The others run at once, each service down for
//! its own migration and restart.

use super::{MigrateError, Migration, Params};
use crate::host::Host;
use crate::stop_services::{StopOptions, stop_set};
use crate::unit::UnitName;
use std::collections::BTreeSet;
use std::time::Duration;

/// Migrations running at once, at most: each is a one-off container of the application, which
/// on a small host weighs as much as the service itself.
pub const AT_ONCE: usize = 4;

/// For each migration, the earlier ones it must wait for. Without `stop_first` nothing tells
/// them apart, so each waits for the one before it, as they always did.
pub fn dependencies(
    list: &[Migration],
    p: &Params,
    host: &Host,
) -> Result<Vec<Vec<usize>>, MigrateError> {
    if !p.stop_first || list.len() < 2 {
        return Ok((0..list.len()).map(|i| (0..i).collect()).collect());
    }
    let mut reach: Vec<Reach> = Vec::with_capacity(list.len());
    for m in list {
        reach.push(reach_of(m, p, host)?);
    }
    let apart = |a: &Reach, b: &Reach| {
        a.stops.is_disjoint(&b.stops)
            && a.ordered.is_disjoint(&b.stops)
            && b.ordered.is_disjoint(&a.stops)
    };
    Ok((0..list.len())
        .map(|i| (0..i).filter(|&j| !apart(&reach[i], &reach[j])).collect())
        .collect())
}

/// What one migration touches: the units its stop stops, and the units its service is ordered
/// against.
struct Reach {
    stops: BTreeSet<String>,
    ordered: BTreeSet<String>,
}

/// What a migration's stop would stop, and what its service is ordered against, asked of
/// systemd without stopping anything. A unit not on the host yet (a first deploy, its text only
/// staged) reaches its own service alone.
fn reach_of(m: &Migration, p: &Params, host: &Host) -> Result<Reach, MigrateError> {
    let Some(unit) = &m.unit else {
        return Ok(Reach {
            stops: BTreeSet::new(),
            ordered: BTreeSet::new(),
        });
    };
    let service = UnitName::parse(unit)?.service();
    let how = StopOptions {
        dependents: true,
        missing_ok: true,
        check: true,
        start: host.clock.now(),
        deadline: Duration::from_secs(p.timeout),
    };
    let state = crate::state::StateDir::new(&p.state_dir);
    let record = crate::stop_services::record_path(&state, &p.stop_record)?;
    let one = std::slice::from_ref(&service);
    // The units of its image it stops with it are part of what it touches.
    let mut names = super::same_image::units(m, p, &state, host)?.services;
    names.push(service.clone());
    let planned = stop_set(&super::stop_host(host), &state, &record, &names, &how)?;
    let ordered = host
        .systemd
        .show(one)
        .map_err(crate::stop_services::StopError::from)?
        .iter()
        .flat_map(|s| ORDERING.iter().flat_map(|k| s.list(k)))
        .collect();
    Ok(Reach {
        stops: planned.order.into_iter().chain(names).collect(),
        ordered,
    })
}

/// The properties that order one service against another.
const ORDERING: [&str; 4] = ["After", "Before", "Requires", "BindsTo"];
