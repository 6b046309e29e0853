//! `run_migrations`: a migration command in a one-off container, run only when pending.
//!
//! "Pending" means: no stamp for (image ID, command) exists, and a `check_command`, if given,
//! does not report nothing pending. A stamp is written atomically after success, and never
//! after a failure, so a second run with the same image starts no container at all.
//!
//! A pending migration's container is created before its services stop and removed after they
//! started again, so that they are down for the migration and their start only (`run_one`).

pub mod backup;
mod error;
mod judge;
mod one;
mod params;
mod pending;
mod restore;
mod same_image;
mod source;
pub mod spec;
mod staged;
mod stamp;
mod start_again;
mod together;

pub use error::MigrateError;
pub use judge::{Judgements, judge_all};
pub use params::{Checks, DEFAULT_MIN_HEALTHY_TIME, Migration, Params, validate};
pub use stamp::Stamp;

use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
pub use crate::results::run_migrations::Judgement;
use crate::results::run_migrations::{BatchResult, MigrationResult};
use crate::state::StateDir;
use one::One;
use pending::run_one;
use restore::restore;
use std::time::Instant;

/// What one migration reports.
type Report = MigrationResult;

/// How many lines of output a result carries.
const TAIL_LINES: usize = 20;

pub fn run(p: Params, inv: &Invocation, host: &Host) -> Result<Outcome, MigrateError> {
    let t0 = Instant::now();
    let batch = !p.migrations.is_empty();
    let list = if batch {
        p.migrations.clone()
    } else {
        vec![p.one.clone()]
    };
    validate(&p)?;
    let state = StateDir::new(&p.state_dir);
    let _lock = if inv.check_mode {
        None
    } else {
        Some(state.lock_for_run("run_migrations", p.run_id.as_deref(), host.clock)?)
    };
    if p.restore {
        return restore(&p, inv, host, &state, t0);
    }
    if !inv.check_mode {
        // Before the run's first stop: a list of backups whose stop record is gone belongs to
        // a run that finished, and must never be restored by this one.
        let stop_record = crate::stop_services::record_path(&state, &p.stop_record)?;
        backup::forget_finished(&state, &p.stop_record, &stop_record)?;
    }
    let deps = together::dependencies(&list, &p, host)?;
    let books = pending::Books::default();
    // Independent migrations run at once, each with its own stop, migration and start; one
    // that fails starts nothing more, and those running finish.
    let mut walked = crate::parallel::walk(
        list.iter().collect(),
        &deps,
        together::AT_ONCE,
        |m| {
            let mut one = One::new(m, &p, inv, host, &state);
            let d = run_one(&mut one, &books);
            (d, one.revealed)
        },
        |(d, _)| d.as_ref().is_ok_and(|d| !d.failed),
    );
    // Reported in the order they were given, whatever order they finished in.
    walked.sort_by_key(|w| w.index);
    // The values of the units' secrets, once read for a run: masked like parameters.
    let mut revealed = Vec::new();
    let mut done = Vec::with_capacity(list.len());
    let mut error = None;
    for w in walked {
        let (d, seen) = w.answer;
        revealed.extend(seen);
        match d {
            Ok(d) => done.push(d),
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    match error {
        // An error may quote a migration's output (a timeout's tail), and a migration may
        // print the secrets it was given: a failed result carries them to be masked, as a
        // finished one does.
        Some(e) if !revealed.is_empty() => {
            let mut out = Outcome::default().failed(e.to_string());
            out.mask_also = revealed;
            return Ok(out);
        }
        Some(e) => return Err(e),
        None => {}
    }
    let changed = done.iter().any(|d| d.changed);
    let failed = done.iter().find(|d| d.failed).map(|d| d.msg.clone());
    let msg = done
        .iter()
        .map(|d| d.msg.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let mut out = if batch {
        let data = BatchResult {
            ran: done.iter().filter(|d| d.report.ran).count(),
            migrations: done.into_iter().map(|d| d.report).collect(),
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        Outcome::new(changed, msg).with_data(data)
    } else {
        let mut d = done.remove(0);
        d.report.duration_ms = t0.elapsed().as_millis() as u64;
        Outcome::new(changed, msg).with_data(d.report)
    };
    if let Some(f) = failed {
        out = out.failed(f);
    }
    out.mask_also = revealed;
    Ok(out)
}

/// The part of the host `stop_services` works on.
fn stop_host<'a>(host: &Host<'a>) -> crate::stop_services::Host<'a> {
    crate::stop_services::Host {
        systemd: host.systemd,
        clock: host.clock,
    }
}

pub(crate) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

fn short(id: &str) -> &str {
    crate::converge::short(id)
}

/// Runs the module against this host.
pub fn run_on_host(p: Params, inv: &Invocation) -> Result<Outcome, MigrateError> {
    // Every parameter is checked before the first podman call.
    validate(&p)?;
    let podman = crate::podman::PodmanApi::connect(&p.podman_socket)?;
    let registry = crate::registry::HttpRegistry::from_host();
    let systemd = crate::systemd::Systemctl::for_scope(&inv.scope);
    run(p, inv, &Host::real(&podman, &registry, &systemd))
}

#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod same_image_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakePodman, FakeSystemd};
    use serde_json::json;

    /// A unit `app` whose container takes the podman secret `refit-app-pw-1` (hunter22) as PW,
    /// and a run of its migration with the parameters `extra` added, on `podman`.
    fn run_with_a_secret(podman: &mut FakePodman, extra: serde_json::Value) -> serde_json::Value {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = dir.path().join("quadlet");
        std::fs::create_dir_all(&q).expect("mkdir");
        std::fs::write(
            q.join("app.container"),
            "[Container]\nImage=svc:1\nSecret=refit-app-pw-1,type=env,target=PW\n",
        )
        .expect("write");
        podman.oneoff_prints_env = true;
        podman.images.insert("svc:1".into(), "img-1".into());
        podman.secrets.lock().expect("secrets").insert(
            "refit-app-pw-1".into(),
            ("app.container".into(), "hunter22".into()),
        );
        let mut args = json!({
            "unit": "app", "command": ["migrate"],
            "quadlet_dir": q, "state_dir": dir.path().join("state"),
        });
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        let systemd = FakeSystemd::default();
        crate::testing::respond_on(&spec::SPEC, dir.path(), &args, &systemd, &*podman, run).out
    }

    /// Issue 14: the unit's env secrets reach the one-off container, read from podman when it
    /// runs, and their values are masked in the result, output tail included.
    #[test]
    fn a_units_secrets_reach_the_migration_and_stay_masked() {
        let mut podman = FakePodman::default();
        let out = run_with_a_secret(&mut podman, json!({"secret_env": {"TOKEN": "tok-secret"}}));
        assert_eq!(out["ran"], json!(true), "{out}");
        let env = podman.oneoffs.lock().expect("oneoffs")[0].env.clone();
        assert!(env.contains(&"PW=hunter22".to_string()), "{env:?}");
        assert!(env.contains(&"TOKEN=tok-secret".to_string()), "{env:?}");
        let text = out.to_string();
        assert!(
            !text.contains("hunter22") && !text.contains("tok-secret"),
            "{text}"
        );
    }

    /// A timeout's error quotes the migration's output, which printed the unit's secret.
    #[test]
    fn a_timed_out_migrations_output_is_masked_in_its_error() {
        let mut podman = FakePodman {
            oneoff_times_out: true,
            ..FakePodman::default()
        };
        let out = run_with_a_secret(&mut podman, json!({}));
        assert_eq!(out["failed"], json!(true), "{out}");
        let msg = out["msg"].as_str().unwrap_or_default();
        assert!(msg.contains("timed out") && msg.contains("PW="), "{msg}");
        assert!(!out.to_string().contains("hunter22"), "{out}");
    }

    #[test]
    fn bad_input_is_refused_by_parameter_before_podman_is_asked() {
        let p = |v: serde_json::Value| -> Params {
            let mut base = json!({
                "stop_first": false, "stop_record": "default", "timeout": 1,
                "quadlet_dir": "/q", "state_dir": "/s", "podman_socket": "/nonexistent",
            });
            for (k, x) in v.as_object().expect("object") {
                base[k] = x.clone();
            }
            serde_json::from_value(base).expect("params")
        };
        let cases = [
            (
                json!({"unit": "app", "command": []}),
                "command is an empty list",
            ),
            (
                json!({"migrations": [{"unit": "app", "command": ["m"]}, {"unit": "../x", "command": ["m"]}]}),
                "migrations[1].unit: unit name",
            ),
            (
                json!({"image": "Not A/Ref::", "command": ["m"]}),
                "image: image reference",
            ),
        ];
        for (args, needle) in cases {
            let err = run_on_host(p(args.clone()), &Invocation::default()).expect_err("refused");
            assert!(err.to_string().contains(needle), "{args}: {err}");
        }
    }
}
