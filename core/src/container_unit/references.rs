//! The run's units as a graph (`unit::graph`): each target's references are followed to the
//! run's other targets or, for a unit the run does not name, to its file in the quadlet dir.
//! Each target gets its effective revision, the image its `.image` or `.build` unit names, and
//! the services it must start after.

use super::error::ReferenceError;
use super::{Target, UnitError};
use crate::plan::Wanted;
use crate::reference::ImageRef;
use crate::unit::graph::{self, Node, RefRevision, image_of};
use crate::unit::{Kind, UnitFile, UnitName};
use std::collections::BTreeMap;
use std::path::Path;

/// The image the unit file `name` in `dir` names, for a text that refers to it (a checkpoint's).
pub fn image_on_disk(dir: &Path, name: &str) -> Result<String, UnitError> {
    let (unit, kind) = on_disk(dir, name)?.ok_or_else(|| ReferenceError::NoImage {
        from: name.to_string(),
        unit: name.to_string(),
    })?;
    image_of(kind, &unit).ok_or_else(|| {
        ReferenceError::NoImage {
            from: name.to_string(),
            unit: name.to_string(),
        }
        .into()
    })
}

/// The unit `name` as its file in `dir` holds it; None when there is no such file.
fn on_disk(dir: &Path, name: &str) -> Result<Option<(UnitFile, Kind)>, UnitError> {
    let Ok(n) = UnitName::parse(name) else {
        return Ok(None);
    };
    let path = dir.join(name);
    let Some(text) = crate::state::read_optional(&path)? else {
        return Ok(None);
    };
    let unit = UnitFile::parse(&text).map_err(|e| ReferenceError::BadFile {
        unit: name.to_string(),
        path: path.clone(),
        source: e,
    })?;
    Ok(Some((unit, n.kind())))
}

/// Gives each target its effective revision, the image its image unit names, and the
/// services of what it refers to as services it starts after.
pub fn resolve(targets: &mut [Target], quadlet_dir: &Path) -> Result<(), UnitError> {
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    let mut units: BTreeMap<String, (UnitFile, Kind)> = BTreeMap::new();
    // A unit the run removes is no longer there to refer to.
    let leaving: Vec<String> = targets
        .iter()
        .filter(|t| t.wanted == Wanted::Absent)
        .map(|t| t.name.file_name())
        .collect();
    let mut pending: Vec<String> = Vec::new();
    for t in targets.iter() {
        let Some(d) = &t.desired else { continue };
        let node = Node {
            own: d.own.clone(),
            refs: graph::references(d.kind, &d.unit),
            extra: t.inputs.extra.clone(),
        };
        pending.extend(node.refs.iter().map(|r| r.to.clone()));
        nodes.insert(t.name.file_name(), node);
        units.insert(t.name.file_name(), (d.unit.clone(), d.kind));
    }
    // What the run does not name is read from the quadlet dir, with its own references.
    while let Some(name) = pending.pop() {
        if nodes.contains_key(&name) || leaving.contains(&name) {
            continue;
        }
        let Some((unit, kind)) = on_disk(quadlet_dir, &name)? else {
            continue;
        };
        let dropins = crate::unit::dropins::read(quadlet_dir, &name)?;
        let node = Node {
            own: crate::unit::dropins::revision_with(&unit, &dropins),
            refs: graph::references(kind, &unit),
            extra: Vec::new(),
        };
        pending.extend(node.refs.iter().map(|r| r.to.clone()));
        nodes.insert(name.clone(), node);
        units.insert(name, (unit, kind));
    }
    let effective = graph::effective(&nodes).map_err(ReferenceError::from)?;
    for t in targets.iter_mut() {
        let name = t.name.file_name();
        let Some(node) = nodes.get(&name) else {
            continue;
        };
        t.inputs.refs = node
            .refs
            .iter()
            .filter_map(|r| {
                Some(RefRevision {
                    unit: r.to.clone(),
                    revision: effective.get(&r.to)?.clone(),
                })
            })
            .collect();
        for r in &node.refs {
            if let Ok(n) = UnitName::parse(&r.to) {
                t.after.push(n.service());
            }
        }
        let Some(d) = t.desired.as_mut() else {
            continue;
        };
        if let Some(rev) = effective.get(&name) {
            d.set_revision(rev.clone());
        }
        if let Some(unit) = d.image_unit.clone() {
            let image = units
                .get(&unit)
                .and_then(|(u, k)| image_of(*k, u))
                .ok_or_else(|| ReferenceError::NoImage {
                    from: name.clone(),
                    unit: unit.clone(),
                })?;
            let image = ImageRef::parse(&image)
                .map_err(|e| UnitError::from(crate::unit::render::RenderError::from(e)))?;
            d.image = Some(image);
        }
    }
    Ok(())
}
