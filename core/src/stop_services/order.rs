//! Dependency order among a set of units, from what systemd reports. Pure code.

use crate::systemd::UnitStatus;
use std::collections::{BTreeMap, BTreeSet};

/// The units `s` depends on for ordering: what it requires, binds to or starts after. A target
/// also depends on its members (`ConsistsOf`, the other side of `PartOf`): they start before it.
fn depends_on(s: &UnitStatus) -> BTreeSet<String> {
    DEPENDS_ON.iter().flat_map(|k| s.list(k)).collect()
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

/// Stop order: the reverse of the start order, except that sockets go first and targets last.
/// A socket still listening would start its service again at the next connection; stopping a
/// target first would let systemd stop all its members at once, out of refit's order.
pub fn stop_order(units: &[UnitStatus]) -> Vec<String> {
    let mut o = start_order(units);
    o.reverse();
    let (targets, rest): (Vec<String>, Vec<String>) =
        o.into_iter().partition(|u| u.ends_with(".target"));
    let (sockets, rest): (Vec<String>, Vec<String>) =
        rest.into_iter().partition(|u| u.ends_with(".socket"));
    sockets.into_iter().chain(rest).chain(targets).collect()
}

/// The properties `going_down_with` reads: the other side of `Requires=`, `BindsTo=` and
/// `PartOf=`, and the sockets of a service.
const GOING_DOWN_WITH: &[&str] = &["RequiredBy", "BoundBy", "ConsistsOf", "TriggeredBy"];
/// The properties `wanting` reads: the other side of `Wants=` and `Upholds=`.
const WANTING: &[&str] = &["WantedBy", "UpheldBy"];
/// The properties `depends_on` reads.
const DEPENDS_ON: &[&str] = &["Requires", "BindsTo", "After", "ConsistsOf"];

/// The units that would go down with `s`: those that require it, bind to it, or are part of it,
/// and the sockets that would start it again.
pub fn going_down_with(s: &UnitStatus) -> Vec<String> {
    GOING_DOWN_WITH.iter().flat_map(|k| s.list(k)).collect()
}

/// The units that stay up when `s` stops, and start it again as they start: those that want
/// it (refit writes `depends_on` as `Wants=`, so an update of `s` restarts nothing else) or
/// uphold it. One that restarts on its own after `s` went away (`Restart=on-failure`) pulls
/// `s` up again at once, in the middle of whatever the stop was for: a stop that must hold
/// stops them too. Targets are left out: they start at boot or by hand, and
/// `multi-user.target` wants every unit installed for the boot, so stopping it would stop the
/// host's other services.
pub fn wanting(s: &UnitStatus) -> Vec<String> {
    WANTING
        .iter()
        .flat_map(|k| s.list(k))
        .filter(|u| !u.ends_with(".target"))
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

    /// A socket starts before its service (systemd orders the service After= it) and stops
    /// before it, so no connection starts the service again once it is stopped.
    #[test]
    fn sockets_start_before_and_stop_before_their_service() {
        let units = [
            unit(
                "api.service",
                &[
                    ("After", "api.socket db.service"),
                    ("TriggeredBy", "api.socket"),
                ],
            ),
            unit("api.socket", &[]),
            unit("db.service", &[]),
        ];
        assert_eq!(
            start_order(&units),
            ["api.socket", "db.service", "api.service"]
        );
        assert_eq!(
            stop_order(&units),
            ["api.socket", "api.service", "db.service"]
        );
        assert_eq!(going_down_with(&units[0]), ["api.socket"]);
    }

    /// A property not asked of `systemctl show` reads as empty on a real host, though the fakes
    /// answer it: every one read here must be asked.
    #[test]
    fn every_property_read_here_is_asked_of_systemctl() {
        for key in [GOING_DOWN_WITH, WANTING, DEPENDS_ON].concat() {
            assert!(
                crate::systemd::PROPERTIES.contains(&key),
                "{key} is read but never asked"
            );
        }
    }

    /// What wants a unit starts it again, so a stop that must hold takes it down too; the
    /// targets that want it for the boot stay.
    #[test]
    fn what_wants_a_unit_is_named_but_never_a_target() {
        let db = unit(
            "db.service",
            &[
                ("WantedBy", "multi-user.target worker@1.service api.service"),
                ("UpheldBy", "keeper.service"),
                ("RequiredBy", "app.service"),
            ],
        );
        assert_eq!(
            wanting(&db),
            ["worker@1.service", "api.service", "keeper.service"]
        );
        assert_eq!(going_down_with(&db), ["app.service"]);
    }
}
