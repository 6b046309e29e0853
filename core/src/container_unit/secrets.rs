//! `secret_env` through podman secrets. Each value is held in a podman secret named after a
//! keyed hash of (unit, key, value), and the unit says `Secret=NAME,type=env,target=KEY`, so:
//! - no value is written into a unit file, the generator's output or `systemctl show`;
//! - a new value is a new name, so a new revision: rotating one secret restarts exactly the
//!   units that use it;
//! - an old revision's secrets keep their names, so a rollback finds them; a secret is removed
//!   only once no revision in the unit's history, no checkpoint and no file on disk names it.
//!
//! The hash is keyed with a random host key kept 0600 in the state dir: a name in a readable
//! unit file must not let anyone test guesses of the value. refit records, per unit, the keys
//! and names of every secret it ever held, never a value, so a value a unit held before (a
//! unit file written by an older refit still says `Environment=KEY=VALUE`) is masked in
//! every diff too.

use super::secret_names::{SecretKey, referenced, secret_name};
use super::{Host, Target, UnitError};
use crate::podman::SecretInfo;
use crate::state::{StateDir, StateError, read_json, write_json};
use crate::unit::{UnitFile, words};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How many secret names a unit's record keeps for masking.
const KEEP_NAMES: usize = 200;

/// What refit knows of a unit's secrets, ever: their keys and names, never a value.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Record {
    env_keys: BTreeSet<String>,
    names: Vec<String>,
}

fn record_path(state: &StateDir, t: &Target) -> std::path::PathBuf {
    state.unit_secrets(&t.name.file_name())
}

/// Makes every secret the target's desired revision needs exist, before anything is written
/// or stopped: the ones `secret_env` gives are created, and the ones a recorded revision
/// names (a rollback) must still be there. Check mode creates nothing.
pub fn ensure(host: &Host, state: &StateDir, t: &Target, check: bool) -> Result<(), UnitError> {
    let Some(d) = &t.desired else { return Ok(()) };
    let named = referenced(&d.text());
    if named.is_empty() {
        return Ok(());
    }
    let held: BTreeSet<String> = host.podman.secrets()?.into_iter().map(|s| s.name).collect();
    let given: BTreeSet<&str> = t.secrets.iter().map(|s| s.name.as_str()).collect();
    if let Some(gone) = named
        .iter()
        .find(|n| !held.contains(*n) && !given.contains(n.as_str()))
    {
        return Err(UnitError::SecretGone {
            unit: t.name.file_name(),
            secret: gone.clone(),
        });
    }
    if check {
        return Ok(());
    }
    for s in t
        .secrets
        .iter()
        .filter(|s| named.contains(&s.name) && !held.contains(&s.name))
    {
        host.podman
            .create_secret(&s.name, &t.name.file_name(), &s.value)?;
    }
    let path = record_path(state, t);
    let mut rec: Record = read_json(&path)?.unwrap_or_default();
    let before = rec.clone();
    for s in &t.secrets {
        rec.env_keys.insert(s.env.clone());
        if !rec.names.contains(&s.name) {
            rec.names.push(s.name.clone());
        }
    }
    let excess = rec.names.len().saturating_sub(KEEP_NAMES);
    rec.names.drain(..excess);
    if rec != before {
        state.ensure_parent(&path)?;
        write_json(&path, &rec, 0o600)?;
    }
    Ok(())
}

/// Removes the target's secrets that nothing can need any more: no revision of its history,
/// no hand edit refit kept, no checkpoint, no stage and no file on disk names them. Says why
/// it kept them all when a stage cannot be read.
fn prune(host: &Host, state: &StateDir, t: &Target) -> Result<Option<String>, UnitError> {
    let unit = t.name.file_name();
    let ours: Vec<SecretInfo> = host
        .podman
        .secrets()?
        .into_iter()
        .filter(|s| s.unit.as_deref() == Some(unit.as_str()))
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    let history = state.unit_history(&unit)?;
    let mut texts: Vec<String> = history
        .revisions
        .iter()
        .chain(&history.drift)
        .map(|r| r.text.clone())
        .collect();
    texts.extend(crate::state::read_optional(&t.path)?);
    texts.extend(checkpoint_texts(state, &unit)?);
    // A staged text is installed later in the run: the secrets it names are not former ones.
    // A stage that cannot be read may name any of them: they all stay, and the call goes on.
    match state.staged_texts(&unit) {
        Ok(staged) => texts.extend(staged),
        Err(e @ StateError::CorruptStage { .. }) => {
            return Ok(Some(format!("{unit}: its former secrets were kept: {e}")));
        }
        Err(e) => return Err(e.into()),
    }
    let keep: BTreeSet<String> = texts.iter().flat_map(|t| referenced(t)).collect();
    for s in ours.into_iter().filter(|s| !keep.contains(&s.name)) {
        host.podman.remove_secret(&s.name)?;
    }
    Ok(None)
}

fn checkpoint_texts(state: &StateDir, unit: &str) -> Result<Vec<String>, StateError> {
    let dir = state.checkpoints_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        if e.path().extension().is_some_and(|x| x == "json")
            && let Some(cp) = read_json::<super::checkpoint::Checkpoint>(&e.path())?
            && let Some(text) = cp.units.get(unit).and_then(|en| en.text.clone())
        {
            out.push(text);
        }
    }
    Ok(out)
}

/// What the run leaves of its units' secrets.
pub struct AfterRun {
    /// The former secret values, to mask in the run's result.
    pub former: Vec<String>,
    /// Why a unit's secrets were kept that a prune would have removed.
    pub warnings: Vec<String>,
}

/// After the run: the former secret values to mask in its result, and, when `prune`, the
/// secrets of the units it changed that nothing needs any more removed.
pub fn after_run(
    host: &Host,
    state: &StateDir,
    key: &SecretKey,
    work: &[super::work::Work],
    prune_changed: bool,
) -> Result<AfterRun, UnitError> {
    let mut former = Vec::new();
    let mut warnings = Vec::new();
    for super::work::Work {
        target: t,
        observed: obs,
        plan,
        ..
    } in work
    {
        let desired = t.desired.as_ref().map(|d| d.text());
        let mut texts: Vec<&str> = obs
            .history
            .revisions
            .iter()
            .map(|r| r.text.as_str())
            .collect();
        texts.extend(obs.file_text.as_deref());
        texts.extend(desired.as_deref());
        former.extend(former_values(state, key, t, &texts)?);
        if prune_changed && plan.changes() {
            warnings.extend(prune(host, state, t)?);
        }
    }
    Ok(AfterRun { former, warnings })
}

/// Values in `texts` (a unit's text before, the revision it goes back to) that were secrets
/// of this unit: an `Environment=` word whose key was ever a secret's, or whose value hashes
/// to a secret refit created. They are masked in the result like the parameters.
fn former_values(
    state: &StateDir,
    key: &SecretKey,
    t: &Target,
    texts: &[&str],
) -> Result<Vec<String>, StateError> {
    let rec: Record = read_json(&record_path(state, t))?.unwrap_or_default();
    let mut keys = rec.env_keys;
    keys.extend(t.secrets.iter().map(|s| s.env.clone()));
    let mut out = Vec::new();
    for text in texts {
        let Ok(u) = UnitFile::parse(text) else {
            continue;
        };
        for word in u.values("Container", "Environment").flat_map(words::split) {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            if keys.contains(k) || rec.names.contains(&secret_name(key, &t.name, k, v)) {
                out.push(v.to_string());
            }
        }
    }
    Ok(out)
}
