//! Which units a stop takes: the asked ones, the members of asked targets and the sockets of
//! asked services, and (with `dependents`) everything that would go down with them or start
//! them again, transitively. One `systemctl show` per layer.

use super::{StopError, order};
use crate::systemd::{Systemd, UnitStatus};
use std::collections::BTreeSet;

/// The set a stop of `names` takes. Without `dependents`, an active unit that would go down
/// with them is refused: systemd would stop it anyway, out of refit's order and record. One
/// that only wants them is not: systemd leaves it running.
pub(super) fn expand(
    systemd: &dyn Systemd,
    names: &[String],
    dependents: bool,
    missing_ok: bool,
) -> Result<Vec<UnitStatus>, StopError> {
    let first = systemd.show(names)?;
    check_missing(&first, missing_ok)?;
    let mut set: Vec<UnitStatus> = first.into_iter().filter(UnitStatus::exists).collect();
    let mut known: BTreeSet<String> = set.iter().map(|s| s.name.clone()).collect();
    let mut frontier: Vec<UnitStatus> = set.clone();
    let mut refused: BTreeSet<String> = BTreeSet::new();
    while !frontier.is_empty() {
        let mut next = BTreeSet::new();
        for s in &frontier {
            // A target's members, and a service's sockets, always go with it.
            let mut members = s.list("ConsistsOf");
            members.extend(s.list("TriggeredBy"));
            for d in order::going_down_with(s) {
                if known.contains(&d) {
                    continue;
                }
                if dependents || members.contains(&d) {
                    next.insert(d);
                } else {
                    refused.insert(d);
                }
            }
            if dependents {
                next.extend(order::wanting(s).into_iter().filter(|d| !known.contains(d)));
            }
        }
        let next: Vec<String> = next
            .into_iter()
            .filter(|n| known.insert(n.clone()))
            .collect();
        frontier = systemd
            .show(&next)?
            .into_iter()
            .filter(UnitStatus::exists)
            .collect();
        set.extend(frontier.iter().cloned());
    }
    if !refused.is_empty() {
        let statuses = systemd.show(&refused.into_iter().collect::<Vec<_>>())?;
        let active: Vec<String> = statuses
            .iter()
            .filter(|s| s.is_active())
            .map(|s| s.name.clone())
            .collect();
        if !active.is_empty() {
            return Err(StopError::ActiveDependents {
                units: names.join(", "),
                dependents: active.join(", "),
            });
        }
    }
    Ok(set)
}

/// Refuses a set with a unit that does not exist, unless `missing_ok`.
pub(super) fn check_missing(set: &[UnitStatus], missing_ok: bool) -> Result<(), StopError> {
    match set.iter().find(|s| !s.exists()) {
        Some(m) if !missing_ok => Err(StopError::Missing(m.name.clone())),
        _ => Ok(()),
    }
}

/// The names of what a stop of `names` with dependents takes (`expand`), where they exist:
/// what must go down before them and come back after them.
pub fn going_with(systemd: &dyn Systemd, names: &[String]) -> Result<BTreeSet<String>, StopError> {
    Ok(expand(systemd, names, true, true)?
        .into_iter()
        .map(|s| s.name)
        .collect())
}
