//! From the call's parameters to its targets: every unit validated, rendered and named, its
//! references followed, in dependency order. Nothing on the host is touched.

use super::desired::Desired;
use super::target::Target;
use super::{Params, UnitError, UnitParams};
use crate::param_path::WithinParam;
use crate::plan::Wanted;
use crate::unit::{ContainerOptions, UnitFile, UnitName, render_kind};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Validates every unit of the run and orders them by dependency. `key` names the podman
/// secrets of `secret_env`.
pub fn targets(p: &Params, key: &super::secret_names::SecretKey) -> Result<Vec<Target>, UnitError> {
    let entries: Vec<&UnitParams> = if p.units.is_empty() {
        vec![&p.unit]
    } else {
        if let Some(given) = given_top_level(&p.unit) {
            return Err(UnitError::MixedUnits(given));
        }
        p.units.iter().collect()
    };
    let mut out: Vec<Target> = Vec::with_capacity(entries.len());
    let mut seen = BTreeSet::new();
    for (i, u) in entries.iter().enumerate() {
        let mut t = target(u, u.state.unwrap_or(p.state), &p.quadlet_dir, i, key).map_err(|e| {
            if p.units.is_empty() {
                e
            } else {
                e.within(&format!("units[{i}]"))
            }
        })?;
        t.systemd_dir = p.systemd_dir.clone();
        // A template's instances are files too (links to it): an instance file of the same
        // name in the same run would be the same path.
        let files = std::iter::once(t.name.file_name()).chain(
            t.instances
                .iter()
                .map(|i| format!("{}{i}.container", t.name.stem())),
        );
        for file in files {
            if !seen.insert(file.clone()) {
                return Err(UnitError::Duplicate(file));
            }
        }
        out.push(t);
    }
    super::references::resolve(&mut out, &p.quadlet_dir)?;
    let names: Vec<String> = out.iter().map(|t| t.name.file_name()).collect();
    // Which unit file runs each service, so each unit's dependencies are found by lookup,
    // not by comparing every pair of units.
    let mut runs: HashMap<String, usize> = HashMap::new();
    for (i, t) in out.iter().enumerate() {
        for s in t.services().into_iter().chain([t.name.service()]) {
            runs.entry(s).or_insert(i);
        }
    }
    let by_name: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let order = crate::order::topo(&names, |n| {
        let Some(t) = by_name.get(n).map(|&i| &out[i]) else {
            return Vec::new();
        };
        t.after
            .iter()
            .filter_map(|s| runs.get(s))
            .map(|&i| names[i].clone())
            .collect()
    });
    let mut slots: Vec<Option<Target>> = out.into_iter().map(Some).collect();
    Ok(order
        .iter()
        .filter_map(|n| by_name.get(n.as_str()).and_then(|&i| slots[i].take()))
        .collect())
}

fn given_top_level(u: &UnitParams) -> Option<&'static str> {
    let o = &u.options;
    [
        ("name", u.name.is_some()),
        ("image", o.image.is_some()),
        ("content", o.content.is_some()),
        ("instances", !u.instances.is_empty()),
        ("env", !o.env.is_empty()),
        ("exec", o.exec.is_some()),
    ]
    .into_iter()
    .find_map(|(k, given)| given.then_some(k))
}

fn target(
    u: &UnitParams,
    wanted: Wanted,
    quadlet_dir: &std::path::Path,
    index: usize,
    key: &super::secret_names::SecretKey,
) -> Result<Target, UnitError> {
    let raw = u.name.as_deref().ok_or(UnitError::UnnamedUnit(index))?;
    let name = UnitName::parse(raw).map_err(|e| UnitError::from(e).within("name"))?;
    if name.is_template()
        && u.instances.is_empty()
        && !matches!(wanted, Wanted::Absent | Wanted::Stopped)
    {
        return Err(UnitError::TemplateWithoutInstances(name.file_name()));
    }
    if !name.is_template() && !u.instances.is_empty() {
        return Err(UnitError::InstancesWithoutTemplate(name.file_name()));
    }
    super::inputs::check(&u.restart_on_change)?;
    if name.is_template() && u.options.socket.is_some() {
        return Err(UnitError::Render(
            crate::unit::socket::SocketError::Template(name.file_name()).into(),
        ));
    }
    if !name.is_template() && u.canary.is_some() {
        return Err(UnitError::CanaryWithoutTemplate(name.file_name()));
    }
    for i in &u.instances {
        if i.is_empty()
            || !i
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ":_.-".contains(c))
            || i.contains("..")
        {
            return Err(UnitError::BadInstance(name.file_name(), i.clone()));
        }
    }
    if let Some(twice) = u
        .instances
        .iter()
        .enumerate()
        .find_map(|(n, i)| u.instances[..n].contains(i).then_some(i))
    {
        return Err(UnitError::DuplicateInstance(
            name.file_name(),
            twice.clone(),
        ));
    }
    if u.rollback_to.is_some() && wanted != Wanted::RolledBack {
        return Err(UnitError::RollbackToWithoutRollback(name.file_name()));
    }
    let dropins = crate::unit::dropins::read(quadlet_dir, &name.file_name())?;
    let desired = match wanted {
        Wanted::Absent | Wanted::RolledBack => None,
        _ => {
            let r = render_kind(name.kind(), &u.options, &|k, v| {
                super::secret_names::secret_name(key, &name, k, v)
            })
            .map_err(super::render_error)?;
            super::links::check_install(&r.unit)?;
            let mut unit = r.unit;
            crate::unit::socket::pull_in(&mut unit, name.stem());
            Some(Desired::from_unit(unit, name.kind(), r.image, &dropins))
        }
    };
    let after = after_of(&u.options, desired.as_ref().map(|d| &d.unit));
    let secrets = super::secret_names::of(key, &name, &u.options.secret_env);
    Ok(Target {
        path: quadlet_dir.join(name.file_name()),
        name,
        wanted,
        desired,
        instances: u.instances.clone(),
        canary: u.canary.map(|c| c as usize),
        after,
        systemd_dir: PathBuf::new(),
        secrets,
        rollback_to: u.rollback_to.clone(),
        dropins,
        inputs: crate::unit::graph::Inputs::default(),
        restart_on_change: u.restart_on_change.clone(),
        never_started: u.state == Some(Wanted::Present),
    })
}

fn after_of(o: &ContainerOptions, unit: Option<&UnitFile>) -> Vec<String> {
    let mut after: Vec<String> = o
        .depends_on
        .iter()
        .map(|d| crate::unit::name::service_name(d))
        .collect();
    if let Some(u) = unit {
        for key in ["After", "Requires", "BindsTo", "Wants", "PartOf"] {
            after.extend(
                u.values("Unit", key)
                    .flat_map(|v| v.split_whitespace().map(str::to_string)),
            );
        }
    }
    after
}
