//! The version of each outside input (`inputs`) that last ran, kept so that a restart for a
//! changed input that fails can put the old version back and run on it again.
//!
//! - A `restart_on_change` file is copied into the state dir, root's alone (0700 dir, 0600
//!   file), named after a keyed digest of its content, with the mode and owner it had.
//! - Another tool's podman secret is copied into a podman secret of refit's own
//!   (`refit-kept-DIGEST`, labelled with the unit it is kept for): its value never leaves
//!   podman's store for a file of refit's.
//!
//! The unit's record names each input, its digest and its copy, never a value. Copies are taken
//! when a run converges, of every unit that has such inputs, and only the last version that
//! ran is kept: a newer one replaces it, and a unit that has no inputs any more, or is
//! removed, keeps nothing.

use super::inputs::{Input, InputSource};
use super::secret_names::SecretKey;
use super::work::Work;
use super::{Host, Target, UnitError};
use crate::plan::Wanted;
use crate::state::{
    Owner, StateDir, atomic_write, atomic_write_owned, io_err, read_json, remove_file, write_json,
};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The name of every copy refit keeps of another tool's secret starts so.
const COPY_PREFIX: &str = "refit-kept-";

/// What refit keeps of one unit's inputs: the version of each that last ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Kept {
    inputs: Vec<KeptInput>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct KeptInput {
    source: Source,
    /// A keyed digest of the value (`SecretKey::digest`); the copy is named after it.
    digest: String,
    /// A file's mode and owner, to put it back as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<FileMeta>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Source {
    File(PathBuf),
    Secret(String),
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
struct FileMeta {
    mode: u32,
    owner: Owner,
}

impl From<&InputSource> for Source {
    fn from(s: &InputSource) -> Self {
        match s {
            InputSource::File(p) => Source::File(p.clone()),
            InputSource::Secret(n) => Source::Secret(n.clone()),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => write!(f, "the file {}", p.display()),
            Source::Secret(n) => write!(f, "the podman secret {n}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    /// Nothing kept yet: the input changed before a run converged with it (the first run
    /// after a takeover), or its copy was removed by hand.
    #[error("refit keeps no version of {0} that ran; put it back with the tool that changed it")]
    NotKept(String),
    #[error(transparent)]
    Host(#[from] UnitError),
}

/// After a run that converged: keeps the inputs every unit of it runs with now, and drops
/// what a unit with no inputs any more, or removed, kept.
pub fn after_run(
    host: &Host,
    state: &StateDir,
    key: &SecretKey,
    work: &[Work],
) -> Result<(), UnitError> {
    for w in work {
        let runs = matches!(
            w.target.wanted,
            Wanted::Started | Wanted::Restarted | Wanted::RolledBack
        );
        if runs && !w.observed.inputs.is_empty() {
            keep(host, state, key, &w.target, &w.observed.inputs)?;
        } else if w.target.wanted == Wanted::Absent || w.observed.inputs.is_empty() {
            save(host, state, &w.target, Kept::default())?;
        }
    }
    Ok(())
}

/// Keeps the value each of `inputs` holds now: a copy for each new version, the record, and
/// the copies of the versions it replaced removed.
fn keep(
    host: &Host,
    state: &StateDir,
    key: &SecretKey,
    t: &Target,
    inputs: &[Input],
) -> Result<(), UnitError> {
    let unit = t.name.file_name();
    let old: Kept = read_json(&state.kept_inputs(&unit))?.unwrap_or_default();
    let mut new = Kept::default();
    for input in inputs {
        let source = Source::from(&input.source);
        let (value, file) = read_now(host, t, &input.source)?;
        let digest = key.digest(&[unit.as_bytes(), source.to_string().as_bytes(), &value]);
        let kept_before = old
            .inputs
            .iter()
            .any(|k| k.source == source && k.digest == digest);
        if !kept_before {
            match &source {
                Source::File(_) => {
                    let dir = state.kept_files_dir(&unit);
                    state.ensure_parent(&dir.join(&digest))?;
                    atomic_write(&dir.join(&digest), &value, 0o600)?;
                }
                Source::Secret(_) => {
                    // Read as text from podman, so it goes back as text.
                    let text = String::from_utf8_lossy(&value);
                    host.podman.keep_secret(&copy_name(&digest), &unit, &text)?;
                }
            }
        }
        new.inputs.push(KeptInput {
            source,
            digest,
            file,
        });
    }
    save(host, state, t, new)
}

/// Records `new` as the unit's kept inputs, and removes the copies only the record it replaces
/// named.
fn save(host: &Host, state: &StateDir, t: &Target, new: Kept) -> Result<(), UnitError> {
    let unit = t.name.file_name();
    let path = state.kept_inputs(&unit);
    let old: Kept = read_json(&path)?.unwrap_or_default();
    if old == new {
        return Ok(());
    }
    if new.inputs.is_empty() {
        remove_file(&path)?;
    } else {
        state.ensure_parent(&path)?;
        write_json(&path, &new, 0o600)?;
    }
    let still = |k: &KeptInput| {
        new.inputs.iter().any(|n| {
            n.digest == k.digest
                && std::mem::discriminant(&n.source) == std::mem::discriminant(&k.source)
        })
    };
    for gone in old.inputs.iter().filter(|k| !still(k)) {
        match gone.source {
            Source::File(_) => {
                remove_file(&state.kept_files_dir(&unit).join(&gone.digest))?;
            }
            Source::Secret(_) => host.podman.remove_secret(&copy_name(&gone.digest))?,
        }
    }
    Ok(())
}

fn copy_name(digest: &str) -> String {
    format!("{COPY_PREFIX}{digest}")
}

/// The value an input holds now, and for a file its mode and owner.
fn read_now(
    host: &Host,
    t: &Target,
    source: &InputSource,
) -> Result<(Vec<u8>, Option<FileMeta>), UnitError> {
    match source {
        InputSource::File(path) => {
            let failed = |source| UnitError::InputFile {
                path: path.clone(),
                source,
            };
            let bytes = std::fs::read(path).map_err(failed)?;
            let m = std::fs::metadata(path).map_err(failed)?;
            let meta = FileMeta {
                mode: m.mode() & 0o7777,
                owner: Owner {
                    uid: m.uid(),
                    gid: m.gid(),
                },
            };
            Ok((bytes, Some(meta)))
        }
        InputSource::Secret(name) => {
            let value =
                host.podman
                    .secret_value(name)?
                    .ok_or_else(|| UnitError::SecretMissing {
                        unit: t.name.file_name(),
                        secret: name.clone(),
                    })?;
            Ok((value.into_bytes(), None))
        }
    }
}

/// Puts back the kept version of each of `inputs` whose value differs from it, and names the
/// ones it put back. Every copy is read before the first input is written: an input with no
/// kept version leaves them all as they are.
pub fn restore(
    host: &Host,
    state: &StateDir,
    t: &Target,
    inputs: &[Input],
) -> Result<Vec<String>, KeptError> {
    let unit = t.name.file_name();
    let kept: Kept = read_json(&state.kept_inputs(&unit))
        .map_err(UnitError::from)?
        .unwrap_or_default();
    let mut back = Vec::new();
    for input in inputs {
        let source = Source::from(&input.source);
        let not_kept = || KeptError::NotKept(source.to_string());
        let k = kept
            .inputs
            .iter()
            .find(|k| k.source == source)
            .ok_or_else(not_kept)?;
        let old = match &source {
            Source::File(_) => {
                let copy = state.kept_files_dir(&unit).join(&k.digest);
                match std::fs::read(&copy) {
                    Ok(bytes) => bytes,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_kept()),
                    Err(e) => return Err(UnitError::from(io_err("read", &copy)(e)).into()),
                }
            }
            Source::Secret(_) => host
                .podman
                .secret_value(&copy_name(&k.digest))
                .map_err(UnitError::from)?
                .ok_or_else(not_kept)?
                .into_bytes(),
        };
        let (now, _) = read_now(host, t, &input.source)?;
        if now != old {
            back.push((k.clone(), old));
        }
    }
    let mut names = Vec::new();
    for (k, old) in back {
        match &k.source {
            Source::File(path) => put_file(path, &old, k.file)?,
            Source::Secret(name) => host
                .podman
                .replace_secret(name, &String::from_utf8_lossy(&old))
                .map_err(UnitError::from)?,
        }
        names.push(k.source.to_string());
    }
    Ok(names)
}

/// Writes a file back atomically, with the mode and owner it had when it was kept.
fn put_file(path: &Path, bytes: &[u8], meta: Option<FileMeta>) -> Result<(), UnitError> {
    let (mode, owner) = meta.map_or((0o600, None), |m| (m.mode, Some(m.owner)));
    Ok(atomic_write_owned(path, bytes, mode, owner)?)
}
