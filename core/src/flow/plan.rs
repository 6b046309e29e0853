//! `begin`'s second half: every image fetched, every unit written and planned, every migration
//! judged, in the call that took the lease. A run with nothing to do then ends in that one call,
//! which is what a scheduled update, an idempotence check or a fleet's current hosts pay.
//!
//! The units and migrations are judged by the specs of `container_unit` and `run_migrations`
//! themselves, so `begin` refuses bad input exactly as they would, before the host is touched.

use super::{FlowError, Params};
use crate::ansible::Invocation;
use crate::ansible::validate::validate;
use crate::container_unit;
use crate::host::Host;
use crate::migrate::{self, Judgement};
use serde_json::{Map, Value, json};

/// What the flow's first call found: the plan of every unit, as `container_unit` returns it,
/// and each migration's verdict.
#[derive(Debug)]
pub struct FlowPlan {
    pub units: crate::ansible::Outcome,
    pub migrations: Vec<Judgement>,
    /// Secret values read for check commands: masked in the result.
    pub revealed: Vec<String>,
}

impl FlowPlan {
    /// Whether the rest of the flow has anything to do: a unit written, to restart or to
    /// start, or a migration pending.
    pub fn work(&self) -> bool {
        let flag = |k: &str| self.units.data.get(k) == Some(&Value::Bool(true));
        self.units.changed
            || flag("restart_needed")
            || flag("start_needed")
            || self.migrations.iter().any(|m| m.pending)
    }

    /// The `plan` return value: the units' result, as `container_unit` returns it.
    pub fn units_result(&self) -> Option<crate::results::container_unit::ContainerUnitResult> {
        serde_json::from_value(Value::Object(self.units.data.clone())).ok()
    }
}

/// Whether `begin` was given the deployment to plan, or only checks to make.
pub fn wanted(p: &Params) -> bool {
    !p.units.is_empty()
}

fn unit_params(
    p: &Params,
    flow: &str,
    run_id: Option<&str>,
) -> Result<container_unit::Params, FlowError> {
    through_spec(
        &container_unit::spec::SPEC,
        json!({
            "units": p.units,
            "state": "present",
            "pull": p.pull(),
            "timeout": p.timeout,
            "max_parallel": p.max_parallel,
            "max_parallel_units": p.max_parallel_units,
            "min_healthy_time": p.min_healthy_time,
            "keep_revisions": p.keep_revisions,
            // The checkpoint of how every unit was before this run, which recovery restores.
            "checkpoint": flow,
            // The run's own call: it renews the run's heartbeat.
            "run_id": run_id,
            // Each new text waits in the stage of that name until its unit restarts.
            "stage": true,
            "quadlet_dir": p.quadlet_dir,
            "systemd_dir": p.systemd_dir,
            "state_dir": p.state_dir,
            "podman_socket": p.podman_socket,
        }),
    )
}

fn migrate_params(p: &Params, flow: &str) -> Result<migrate::Params, FlowError> {
    let images: Map<String, Value> = p
        .units
        .iter()
        .filter_map(|u| {
            Some((
                u.get("name")?.as_str()?.to_string(),
                u.get("image")?.clone(),
            ))
        })
        .collect();
    // A template's instances stop and start with a migration of its image; one with a canary
    // keeps its held-back instances on their revision, so it is left to the start phase.
    let instances: Map<String, Value> = p
        .units
        .iter()
        .filter(|u| u.get("canary").is_none())
        .filter_map(|u| {
            Some((
                u.get("name")?.as_str()?.to_string(),
                u.get("instances")?.clone(),
            ))
        })
        .collect();
    through_spec(
        &migrate::spec::SPEC,
        json!({
            "migrations": p.migrations,
            "images": images,
            "instances": instances,
            "stop_first": true,
            "checks": p.migration_checks.as_str(),
            "stop_record": flow,
            "stage": flow,
            "timeout": p.timeout,
            "quadlet_dir": p.quadlet_dir,
            "state_dir": p.state_dir,
            "podman_socket": p.podman_socket,
        }),
    )
}

/// Another module's parameters, judged by that module's own spec (its defaults filled in).
fn through_spec<T: serde::de::DeserializeOwned>(
    spec: &crate::ansible::ModuleSpec,
    args: Value,
) -> Result<T, FlowError> {
    let Value::Object(args) = args else {
        return Err(FlowError::Params("not an object".into()));
    };
    let params = validate(spec, &args)?;
    serde_json::from_value(Value::Object(params)).map_err(|e| FlowError::Params(e.to_string()))
}

/// Judges the units and migrations without touching the host, and says what the plan of
/// every unit will read of it (nothing without units).
pub fn validate_all(
    p: &Params,
    flow: &str,
    scope: &crate::scope::Scope,
) -> Result<container_unit::Reads, FlowError> {
    if !wanted(p) {
        return Ok(container_unit::Reads::default());
    }
    let units = unit_params(p, flow, None)?;
    let reads = container_unit::validate(&units)?;
    container_unit::ports::refuse_privileged(&units, scope)?;
    if !p.migrations.is_empty() {
        migrate::validate(&migrate_params(p, flow)?)?;
    }
    Ok(reads)
}

/// Fetches, writes and plans every unit (nothing restarts), then judges every migration on
/// the image its unit is about to run; as run `run_id`'s calls.
pub fn make(
    p: &Params,
    inv: &Invocation,
    host: &Host,
    flow: &str,
    run_id: &str,
) -> Result<FlowPlan, FlowError> {
    let units = container_unit::run(unit_params(p, flow, Some(run_id))?, inv, host)?;
    let (migrations, revealed) = if p.migrations.is_empty() || units.failed {
        (Vec::new(), Vec::new())
    } else {
        let state = crate::state::StateDir::new(&p.state_dir);
        let _lock = (!inv.check_mode)
            .then(|| {
                state.lock_for_run(
                    &format!("flow_state {flow}: judging migrations"),
                    Some(run_id),
                    host.clock,
                )
            })
            .transpose()?;
        let judged = migrate::judge_all(&migrate_params(p, flow)?, inv, host)?;
        (judged.list, judged.revealed)
    };
    Ok(FlowPlan {
        units,
        migrations,
        revealed,
    })
}
