//! The parameters of the last successful run, kept in the state dir the way obsah keeps
//! foremanctl's, so a later `refitctl update` needs none. An explicit flag wins.

use crate::cli::{Common, Remembered};
use crate::error::CtlError;
use refit_core::state::{read_json, write_json};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "parameters.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Parameters {
    pub inventory: Option<String>,
    pub deployment: Option<PathBuf>,
    #[serde(default)]
    pub offline: bool,
    pub image_archive: Option<PathBuf>,
    #[serde(default)]
    pub auth_file: Option<PathBuf>,
    pub serial: Option<String>,
    /// The stream the hosts were last brought to; the deployment file's own until an upgrade.
    pub stream: Option<String>,
}

impl Parameters {
    pub fn load(state_dir: &Path) -> Result<Self, CtlError> {
        Ok(read_json(&state_dir.join(FILE))?.unwrap_or_default())
    }

    pub fn save(&self, state_dir: &Path) -> Result<(), CtlError> {
        std::fs::create_dir_all(state_dir).map_err(|e| CtlError::StateDir {
            path: state_dir.to_path_buf(),
            source: e,
        })?;
        Ok(write_json(&state_dir.join(FILE), self, 0o600)?)
    }

    /// These parameters less those `--forget` names, then the flags given now laid over them.
    pub fn overlay(&self, flags: &Common) -> Result<Self, CtlError> {
        let mut base = self.clone();
        for p in &flags.forget {
            base.forget(*p);
        }
        base.overlay_flags(flags)
    }

    fn forget(&mut self, p: Remembered) {
        match p {
            Remembered::Inventory => self.inventory = None,
            Remembered::Deployment => self.deployment = None,
            Remembered::Offline => {
                self.offline = false;
                self.image_archive = None;
            }
            Remembered::ImageArchive => self.image_archive = None,
            Remembered::AuthFile => self.auth_file = None,
            Remembered::Serial => self.serial = None,
            Remembered::Stream => self.stream = None,
        }
    }

    fn overlay_flags(&self, flags: &Common) -> Result<Self, CtlError> {
        let deployment = match &flags.deployment {
            Some(d) => {
                Some(std::path::absolute(d).map_err(|_| CtlError::NoDeployment(d.to_path_buf()))?)
            }
            None => self.deployment.clone(),
        };
        let offline = (flags.offline || self.offline) && !flags.online;
        Ok(Parameters {
            inventory: flags.inventory.clone().or_else(|| self.inventory.clone()),
            deployment,
            offline,
            image_archive: match (&flags.image_archive, offline) {
                (Some(a), _) => Some(a.clone()),
                (None, true) => self.image_archive.clone(),
                (None, false) => None,
            },
            auth_file: flags.auth_file.clone().or_else(|| self.auth_file.clone()),
            serial: flags.serial.clone().or_else(|| self.serial.clone()),
            stream: self.stream.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_what_was_remembered() -> Result<(), CtlError> {
        let dir = tempfile::tempdir().map_err(|e| CtlError::StateDir {
            path: PathBuf::from("tempdir"),
            source: e,
        })?;
        let remembered = Parameters {
            inventory: Some("hosts.ini".into()),
            deployment: Some("/srv/deployment.yml".into()),
            offline: true,
            image_archive: Some("/srv/images.tar".into()),
            auth_file: Some("/etc/refit/auth.json".into()),
            serial: Some("1".into()),
            stream: Some("1.1".into()),
        };
        remembered.save(dir.path())?;
        let loaded = Parameters::load(dir.path())?;
        assert_eq!(loaded, remembered);

        assert_eq!(loaded.overlay(&Common::default())?, remembered);
        let now = loaded.overlay(&Common {
            inventory: Some("other.ini".into()),
            online: true,
            ..Common::default()
        })?;
        assert_eq!(now.inventory.as_deref(), Some("other.ini"));
        assert!(!now.offline);
        assert_eq!(now.image_archive, None, "an archive only applies offline");
        assert_eq!(now.serial.as_deref(), Some("1"));
        assert_eq!(
            now.auth_file, remembered.auth_file,
            "a login stays remembered"
        );

        let forgot = loaded.overlay(&Common {
            forget: vec![
                Remembered::Inventory,
                Remembered::Serial,
                Remembered::Stream,
                Remembered::AuthFile,
            ],
            ..Common::default()
        })?;
        assert_eq!(
            (
                forgot.inventory,
                forgot.serial,
                forgot.stream,
                forgot.auth_file
            ),
            (None, None, None, None)
        );
        assert_eq!(
            forgot.deployment, remembered.deployment,
            "only what was named"
        );
        assert!(forgot.offline);
        // A flag given with --forget of the same parameter still wins.
        let again = loaded.overlay(&Common {
            forget: vec![Remembered::Offline, Remembered::Serial],
            serial: Some("2".into()),
            ..Common::default()
        })?;
        assert_eq!((again.offline, again.image_archive), (false, None));
        assert_eq!(again.serial.as_deref(), Some("2"));
        Ok(())
    }
}
