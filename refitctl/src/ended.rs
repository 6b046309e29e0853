//! The runs refitctl saw end without finishing: it names each flow run it starts
//! (`flow_run_id`), and once their ansible-playbook has exited (after SIGINT or SIGTERM, or a
//! failure), no module of that run will come any more. The next flow passes them on
//! (`flow_ended_runs`), so the preflight resumes a lease one of them left at once instead of
//! waiting out the lease grace (docs/docsite/rst/lease.rst).
//!
//! Kept on the controller, beside the remembered parameters: a host cannot see a controller's
//! process, but the controller that ran the playbook saw it end. Marking the lease on the hosts
//! instead would need one more playbook run, after the operator asked refitctl to stop.

use crate::error::CtlError;
use refit_core::state::{read_json, write_json};
use std::path::Path;

const FILE: &str = "ended-runs.json";

/// Enough for the runs a few interruptions in a row leave; older leases are long quiet.
const KEEP: usize = 8;

/// The runs seen ending, oldest first.
pub fn load(state_dir: &Path) -> Result<Vec<String>, CtlError> {
    Ok(read_json(&state_dir.join(FILE))?.unwrap_or_default())
}

/// Notes that `run_id` ended, keeping the last few.
pub fn note(state_dir: &Path, run_id: &str) -> Result<(), CtlError> {
    let mut runs = load(state_dir)?;
    runs.retain(|r| r != run_id);
    runs.push(run_id.to_string());
    runs.drain(..runs.len().saturating_sub(KEEP));
    Ok(write_json(&state_dir.join(FILE), &runs, 0o600)?)
}

/// A flow that finished leaves no lease, so the runs before it need no mention any more.
pub fn forget_all(state_dir: &Path) -> Result<(), CtlError> {
    refit_core::state::remove_file(&state_dir.join(FILE))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_few_runs_are_kept_once_each_and_a_finished_flow_forgets_them() {
        let d = tempfile::tempdir().expect("tmp");
        assert_eq!(load(d.path()).expect("none"), Vec::<String>::new());
        for i in 0..10 {
            note(d.path(), &format!("update-{i}")).expect("note");
        }
        note(d.path(), "update-9").expect("again");
        let kept = load(d.path()).expect("load");
        assert_eq!(kept.len(), KEEP);
        assert_eq!(kept.first().map(String::as_str), Some("update-2"));
        assert_eq!(kept.last().map(String::as_str), Some("update-9"));
        forget_all(d.path()).expect("forget");
        assert!(load(d.path()).expect("load").is_empty());
    }
}
