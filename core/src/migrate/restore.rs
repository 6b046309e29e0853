//! `restore: true`: a failed run's backups put back.

use super::judge::named_source;
use super::params::migrations;
use super::{MigrateError, Params, backup, stop_host};
use crate::ansible::{Invocation, Outcome};
use crate::host::Host;
use crate::state::StateDir;
use std::time::{Duration, Instant};

/// `restore: true`: puts back the backups this run took, when it is unfinished (its stop
/// record is there), so the previous release starts on the schema it knows.
pub(super) fn restore(
    p: &Params,
    inv: &Invocation,
    host: &Host,
    state: &StateDir,
    t0: Instant,
) -> Result<Outcome, MigrateError> {
    let stop_record = crate::stop_services::record_path(state, &p.stop_record)?;
    if inv.check_mode {
        return Ok(Outcome::new(
            false,
            "check mode: restores nothing".to_string(),
        ));
    }
    let timeout = Duration::from_secs(p.timeout);
    // A flow starts each migrated service again right after its migration, so by the time it
    // fails they may run, and write, on the migrated schema: they stop before their data goes
    // back. The recovery's later steps start them on the previous revision.
    if backup::has_restore(state, &p.stop_record, &stop_record)? {
        crate::stop_services::stop_recorded(
            &stop_host(host),
            &stop_record,
            host.clock.now(),
            timeout,
        )?;
    }
    let envs: backup::EnvByMigration = migrations(p)
        .iter()
        .filter_map(|m| Some((named_source(m), m.backup.as_ref()?.env_words())))
        .collect();
    let site = backup::Site {
        host,
        state,
        record: &p.stop_record,
        timeout,
    };
    let restored = backup::restore(&site, &stop_record, &envs)?;
    let msg = if restored.is_empty() {
        format!(
            "no backup to restore: run {} took none, or finished",
            p.stop_record
        )
    } else {
        let dirs: Vec<&str> = restored.iter().map(|t| t.dir.as_str()).collect();
        format!("restored {}", dirs.join(", "))
    };
    let data = crate::results::run_migrations::RestoreResult {
        duration_ms: t0.elapsed().as_millis() as u64,
        restored,
    };
    Ok(Outcome::new(!data.restored.is_empty(), msg).with_data(data))
}
