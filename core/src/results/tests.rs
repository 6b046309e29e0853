//! The names results give states, reasons and actions are the ones serde writes, and a
//! result reads back as it was written.

use super::container_unit::{ContainerUnitResult, UnitResult};
use crate::plan::{Action, Reason, Wanted};
use serde::Serialize;

fn serde_name(v: impl Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn as_str_is_the_serialized_name() {
    use Wanted::*;
    for w in [Present, Started, Restarted, Stopped, Absent, RolledBack] {
        assert_eq!(w.as_str(), serde_name(w));
    }
    assert_eq!(RolledBack.as_str(), "rolled_back", "not `rolledback`");
    use Reason::*;
    for r in [
        NotInstalled,
        UnitChanged,
        Drift,
        ImageChanged,
        NotRunning,
        Unhealthy,
        ReloadPending,
        Running,
        Installed,
    ] {
        assert_eq!(r.as_str(), serde_name(r));
    }
    use Action::*;
    for a in [WriteUnit, RemoveUnit, DaemonReload, Stop, Start, Restart] {
        assert_eq!(a.as_str(), serde_name(a));
    }
}

#[test]
fn a_rolled_back_unit_reads_back_as_written() {
    let u = UnitResult {
        unit: "app.container".into(),
        service: "app.service".into(),
        state: Wanted::RolledBack,
        rolled_back: true,
        reasons: vec![Reason::UnitChanged],
        ..UnitResult::default()
    };
    let json = serde_json::to_value(&u).expect("serializes");
    assert_eq!(json["state"], "rolled_back");
    let back: ContainerUnitResult = serde_json::from_value(json).expect("reads back");
    assert_eq!(back.units(), std::slice::from_ref(&u));
}
