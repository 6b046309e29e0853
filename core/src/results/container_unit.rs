//! `container_unit`'s result: one `UnitResult` per unit; a `units` run returns them as a list
//! in a `BatchResult`.

use crate::plan::{Reason, Wanted};
use serde::{Deserialize, Serialize};

/// One unit: what was observed, planned and done.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UnitResult {
    pub unit: String,
    pub service: String,
    pub path: String,
    pub state: Wanted,
    /// systemd reports the service active or activating (for a template: any instance).
    pub active: bool,
    pub revision: RevisionPair,
    pub image: ImageResult,
    pub restart_needed: bool,
    /// A service is not running, and `started` would start it.
    pub start_needed: bool,
    pub restarted: bool,
    /// For a unit with a `socket`: whether this run replaced the running socket (only a change
    /// of the socket's own text does); absent for a unit without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_replaced: Option<bool>,
    pub rolled_back: bool,
    /// A unit refit did not write, found running the desired text and image: taken over as it
    /// runs, with no restart, and its revision recorded (in check mode: would be).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    /// The new text went to the run's stage, to be installed when the unit restarts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub staged: bool,
    /// For a `.network`: the podman network this run made anew (in check mode: would make
    /// anew), its users stopped first, because its change needs a new network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_recreated: Option<String>,
    pub reasons: Vec<Reason>,
    pub actions: Vec<String>,
    pub container_id: Option<String>,
    pub invocation_id: Option<String>,
    /// A template's instances: which revision each runs, and whether this run replaced it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceResult>,
    /// Instances a canary run left on their revision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    #[serde(default)]
    pub duration_ms: Durations,
    /// Images refit pulled for this unit's earlier revisions and removed after this run: no
    /// kept revision, no container and no other tag used them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images_pruned: Vec<PrunedImage>,
    /// With `history: true`: the kept revisions, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<HistoryEntry>>,
}

/// An image refit removed, and the bytes that freed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PrunedImage {
    pub id: String,
    pub bytes: u64,
}

/// One kept revision of a unit.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HistoryEntry {
    /// What `rollback_to` takes (a prefix of it does): the text revision and image together.
    pub id: String,
    /// The unit text's revision hash.
    pub revision: String,
    pub image_ref: String,
    pub image_id: Option<String>,
    /// Whether that image is still on the host, so a rollback to it can run.
    pub local: bool,
    pub stream: Option<String>,
    pub recorded_at: String,
    /// The revision that last converged.
    pub current: bool,
}

impl UnitResult {
    /// The services it covers: its template instances, or the service itself.
    pub fn services(&self) -> Vec<String> {
        if self.instances.is_empty() {
            vec![self.service.clone()]
        } else {
            self.instances.iter().map(|i| i.service.clone()).collect()
        }
    }

    /// A pull was done, or in check mode is due.
    pub fn pulls(&self) -> bool {
        self.actions.iter().any(|a| a == "pull")
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RevisionPair {
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ImageResult {
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub previous_id: Option<String>,
    pub id: Option<String>,
    pub pulled: bool,
    /// Check mode, `pull: always`: the registry holds a newer image under the reference. None
    /// when it was not asked, or could not tell (`registry_error` says why).
    pub newer_available: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct InstanceResult {
    pub service: String,
    pub active: bool,
    pub container_id: Option<String>,
    pub invocation_id: Option<String>,
    /// The revision its container runs.
    pub revision: Option<String>,
    pub replaced: bool,
}

/// Milliseconds each step took; a step that did not run is left out.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Durations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converge: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// A `units` run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BatchResult {
    pub units: Vec<UnitResult>,
    pub restarted_services: Vec<String>,
    pub restart_needed: bool,
    pub start_needed: bool,
    pub rolled_back: bool,
    pub duration_ms: Durations,
}

/// Either form, as a reader meets it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ContainerUnitResult {
    Batch(BatchResult),
    One(Box<UnitResult>),
}

impl ContainerUnitResult {
    pub fn units(&self) -> &[UnitResult] {
        match self {
            ContainerUnitResult::Batch(b) => &b.units,
            ContainerUnitResult::One(u) => std::slice::from_ref(u),
        }
    }

    /// The services this run restarted.
    pub fn restarted_services(&self) -> Vec<String> {
        match self {
            ContainerUnitResult::Batch(b) => b.restarted_services.clone(),
            ContainerUnitResult::One(u) => restarted_services(std::slice::from_ref(u)),
        }
    }
}

/// The services the units' runs restarted: a replaced instance of a template, or the service.
pub fn restarted_services(units: &[UnitResult]) -> Vec<String> {
    units
        .iter()
        .filter(|u| u.restarted)
        .flat_map(|u| {
            if u.instances.is_empty() {
                vec![u.service.clone()]
            } else {
                u.instances
                    .iter()
                    .filter(|i| i.replaced)
                    .map(|i| i.service.clone())
                    .collect()
            }
        })
        .collect()
}
