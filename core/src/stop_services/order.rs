//! Dependency order among a set of units, from what systemd reports. Pure code.

use crate::systemd::UnitStatus;
use std::collections::{BTreeMap, BTreeSet};

/// The units `s` depends on for ordering: what it requires, binds to or starts after. A target
/// also depends on its members (`ConsistsOf`, the other side of `PartOf`): they start before it.
fn depends_on(s: &UnitStatus) -> BTreeSet<String> {
    let mut d: BTreeSet<String> = ["Requires", "BindsTo", "After"]
        .iter()
        .flat_map(|k| s.list(k))
        .collect();
    d.extend(s.list("ConsistsOf"));
    d
}

/// Start order: every unit after the units of the set it depends on, ties in name order.
pub fn start_order(units: &[UnitStatus]) -> Vec<String> {
    let mut names: Vec<String> = units.iter().map(|u| u.name.clone()).collect();
    names.sort();
    let by_name: BTreeMap<&str, &UnitStatus> = units.iter().map(|u| (u.name.as_str(), u)).collect();
    crate::order::topo(&names, |n| {
        by_name
            .get(n)
            .map(|u| depends_on(u).into_iter().collect())
            .unwrap_or_default()
    })
}

/// Stop order: the reverse of the start order, except that targets go last. Stopping a target
/// first would let systemd stop all its members at once, out of refit's order.
pub fn stop_order(units: &[UnitStatus]) -> Vec<String> {
    let mut o = start_order(units);
    o.reverse();
    let (targets, rest): (Vec<String>, Vec<String>) =
        o.into_iter().partition(|u| u.ends_with(".target"));
    rest.into_iter().chain(targets).collect()
}

/// The units that would go down with `s`: those that require it, bind to it, or are part of it.
pub fn dependents(s: &UnitStatus) -> Vec<String> {
    ["RequiredBy", "BoundBy", "ConsistsOf"]
        .iter()
        .flat_map(|k| s.list(k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn unit(name: &str, props: &[(&str, &str)]) -> UnitStatus {
        UnitStatus {
            name: name.into(),
            props: props
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        }
    }

    #[test]
    fn dependencies_start_first_and_stop_last() {
        let units = [
            unit(
                "app.service",
                &[
                    ("Requires", "db.service"),
                    ("After", "db.service network.target"),
                ],
            ),
            unit("worker@1.service", &[("After", "app.service")]),
            unit("db.service", &[]),
            unit(
                "stack.target",
                &[("ConsistsOf", "app.service db.service worker@1.service")],
            ),
        ];
        assert_eq!(
            start_order(&units),
            [
                "db.service",
                "app.service",
                "worker@1.service",
                "stack.target"
            ]
        );
        assert_eq!(
            stop_order(&units),
            [
                "worker@1.service",
                "app.service",
                "db.service",
                "stack.target"
            ]
        );
    }
}
