//! The stage: a flow run's new unit texts, kept where neither quadlet nor systemd reads them
//! (`STATE_DIR/staged/NAME.json`, a 0700 dir, the file 0600) until the phase that restarts
//! each unit installs it. Whatever starts a unit before then (a boot, `Restart=on-failure`, an
//! operator) starts the text that ran before the run, on the data as it was.
//!
//! A stage is named like the flow's checkpoint, so there is one per unfinished run of a flow;
//! the preflight of a run (a resumed one too) writes it whole, one atomic write, and the run's
//! finish or its rollback to the checkpoint removes it. An install never changes the stage: a
//! text already installed is the file on disk, and installing it again writes nothing.

use super::{StateDir, StateError, UnitHistory, atomic_write, io_err, read_json, remove_file};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The dir of the stages under the state dir.
pub const STAGED: &str = "staged";

/// A run's units still to install, by unit file name (`app.container`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Stage {
    /// Each unit's new text and its revision.
    pub units: BTreeMap<String, Staged>,
    /// Each unit's new image, when its file on disk names the same tag as before (a z-stream
    /// under one tag): the pull moved the tag, and refit moved it back to the image the unit
    /// ran, so that a start before the install runs that image. The install moves it on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<String, Held>,
}

/// A new image held off its tag until its unit's install.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Held {
    /// The reference the unit file names (`REPO:TAG`).
    pub image: String,
    /// The image ID the run pulled under it.
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Staged {
    pub revision: String,
    pub text: String,
}

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// The unit has no staged text: what is on disk stays.
    NotStaged,
    /// The file already had the staged text.
    Already,
    /// The staged text was written; systemd must reload before the unit starts.
    Written,
}

impl StateDir {
    /// The stage `name` (a plain name: the caller checks it, as for checkpoints).
    pub fn stage(&self, name: &str) -> PathBuf {
        self.root().join(STAGED).join(format!("{name}.json"))
    }

    pub fn load_stage(&self, name: &str) -> Result<Stage, StateError> {
        Ok(read_stage(&self.stage(name))?.unwrap_or_default())
    }

    /// Replaces the stage `name` with `stage` in one atomic write; an empty one is removed.
    pub fn save_stage(&self, name: &str, stage: &Stage) -> Result<(), StateError> {
        if stage.units.is_empty() && stage.held.is_empty() {
            return self.drop_stage(name);
        }
        let dir = self.ensure(STAGED)?;
        // Unit texts name the podman secrets a unit uses: the dir is root's alone.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_err("chmod", &dir))?;
        super::write_json(&self.stage(name), stage, 0o600)
    }

    pub fn drop_stage(&self, name: &str) -> Result<(), StateError> {
        remove_file(&self.stage(name)).map(|_| ())
    }

    /// The texts every stage holds for `unit_file`: a secret they name is still to be used.
    pub fn staged_texts(&self, unit_file: &str) -> Result<Vec<String>, StateError> {
        let Ok(entries) = std::fs::read_dir(self.root().join(STAGED)) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            if e.path().extension().is_some_and(|x| x == "json")
                && let Some(mut stage) = read_stage(&e.path())?
                && let Some(staged) = stage.units.remove(unit_file)
            {
                out.push(staged.text);
            }
        }
        Ok(out)
    }

    /// Installs the staged text of `unit_file` (if the stage `name` holds one) into the quadlet
    /// dir, as refit writes a unit: the history first says it was written, so the new file is
    /// not taken for a hand edit. The caller reloads systemd on `Written`.
    pub fn install_staged(
        &self,
        name: &str,
        quadlet_dir: &Path,
        unit_file: &str,
    ) -> Result<Installed, StateError> {
        let Some(staged) = self.load_stage(name)?.units.remove(unit_file) else {
            return Ok(Installed::NotStaged);
        };
        let path = quadlet_dir.join(unit_file);
        if super::read_optional(&path)?.as_deref() == Some(staged.text.as_str()) {
            return Ok(Installed::Already);
        }
        let mut history: UnitHistory = self.unit_history(unit_file)?;
        history.written = Some(staged.revision.clone());
        self.save_unit_history(unit_file, &history)?;
        std::fs::create_dir_all(quadlet_dir).map_err(io_err("create", quadlet_dir))?;
        atomic_write(&path, staged.text.as_bytes(), 0o644)?;
        Ok(Installed::Written)
    }
}

/// A stage, or a refusal that says what a stage is and how to get past a broken one.
fn read_stage(path: &Path) -> Result<Option<Stage>, StateError> {
    read_json(path).map_err(|e| match e {
        StateError::Corrupt { path, detail } => StateError::CorruptStage { path, detail },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged(rev: &str) -> Staged {
        Staged {
            revision: rev.into(),
            text: format!("[Container]\nImage=app:{rev}\n"),
        }
    }

    #[test]
    fn a_stage_is_written_whole_private_and_dropped_when_empty() {
        let d = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(d.path());
        let mut stage = Stage::default();
        stage.units.insert("app.container".into(), staged("2"));
        state.save_stage("upgrade", &stage).expect("saved");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&d.path().join(STAGED)), 0o700);
        assert_eq!(mode(&state.stage("upgrade")), 0o600);
        assert_eq!(state.load_stage("upgrade").expect("loads"), stage);
        state
            .save_stage("upgrade", &Stage::default())
            .expect("saved");
        assert!(!state.stage("upgrade").exists());
    }

    #[test]
    fn an_install_writes_the_staged_text_once_and_records_it_as_written() {
        let d = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(d.path().join("state"));
        let quadlet = d.path().join("quadlet");
        let mut stage = Stage::default();
        stage.units.insert("app.container".into(), staged("2"));
        state.save_stage("update", &stage).expect("saved");
        let install = |unit: &str| state.install_staged("update", &quadlet, unit);
        assert_eq!(install("db.container").expect("ok"), Installed::NotStaged);
        assert!(!quadlet.join("db.container").exists());
        assert_eq!(install("app.container").expect("ok"), Installed::Written);
        let text = std::fs::read_to_string(quadlet.join("app.container")).expect("file");
        assert_eq!(text, staged("2").text);
        let h = state.unit_history("app.container").expect("history");
        assert_eq!(h.written_revision(), Some("2"));
        assert_eq!(install("app.container").expect("ok"), Installed::Already);
        assert_eq!(
            state.staged_texts("app.container").expect("texts"),
            [staged("2").text]
        );
        // Another stage name holds nothing of this run's.
        let other = state.install_staged("deploy", &quadlet, "app.container");
        assert_eq!(other.expect("ok"), Installed::NotStaged);
    }
}
