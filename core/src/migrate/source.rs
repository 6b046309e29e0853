//! Where a migration container comes from: the image, volumes, env and network of a service's
//! quadlet file, or an explicit image.

use super::Migration;
use super::error::SourceError;
use crate::podman::{ImageRef, OneOff};
use crate::unit::{Kind, UnitFile, UnitName, words};
use std::collections::HashMap;

/// A one-off container, and the name of what it was derived from (for stamps and messages).
pub struct Source {
    pub source: String,
    pub spec: OneOff,
    /// The unit's env secrets, read from podman just before a run.
    pub secrets: Vec<EnvSecret>,
}

/// A podman secret a unit hands its container as an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSecret {
    pub secret: String,
    pub variable: String,
}

/// `image`, when given, replaces the unit's `Image=`: the image the unit is about to run.
/// `staged`, when given, is the unit's new text, which the quadlet dir does not hold yet.
pub fn oneoff(
    p: &Migration,
    quadlet_dir: &std::path::Path,
    image: Option<&str>,
    staged: Option<String>,
) -> Result<Source, SourceError> {
    let mut spec = OneOff::default();
    let mut secrets = Vec::new();
    let source = match (&p.unit, &p.image) {
        (Some(unit), _) => {
            let name = UnitName::parse(unit)?;
            let path = quadlet_dir.join(name.file_name());
            // A symlink is refused, so no other file's text can reach a message.
            let text =
                match staged.map_or_else(|| crate::state::read_optional(&path), |t| Ok(Some(t))) {
                    Ok(Some(t)) => t,
                    Ok(None) => return Err(SourceError::NoUnit(path)),
                    Err(source) => return Err(SourceError::Read { path, source }),
                };
            let u = UnitFile::parse(&text).map_err(|source| SourceError::Parse {
                path: path.clone(),
                source,
            })?;
            for entry in u.values("Container", "Secret") {
                secrets.push(env_secret(entry).ok_or_else(|| SourceError::MountedSecret {
                    path: path.clone(),
                    entry: entry.to_string(),
                })?);
            }
            spec.image = u
                .value("Container", "Image")
                .ok_or_else(|| SourceError::NoImage(path.clone()))?
                .to_string();
            // `Image=app.image` runs the image that unit names.
            if let Some(kind) = spec
                .image
                .rsplit_once('.')
                .and_then(|(_, ext)| Kind::from_ext(ext))
                .filter(|k| matches!(k, Kind::Image | Kind::Build))
            {
                let unit_path = quadlet_dir.join(&spec.image);
                spec.image = crate::state::read_optional(&unit_path)
                    .ok()
                    .flatten()
                    .and_then(|t| UnitFile::parse(&t).ok())
                    .and_then(|u| crate::unit::graph::image_of(kind, &u))
                    .ok_or(SourceError::NoImage(unit_path))?;
            }
            if let Some(image) = image {
                spec.image = image.to_string();
            }
            if let Some(image) = &p.image {
                spec.image = image.clone();
            }
            spec.env = u
                .values("Container", "Environment")
                .flat_map(words::split)
                .collect();
            spec.volumes = u
                .values("Container", "Volume")
                .map(quadlet_volume)
                .collect();
            spec.network = u.value("Container", "Network").map(quadlet_network);
            name.service()
        }
        (None, Some(image)) => {
            spec.image = image.clone();
            spec.volumes = p.volumes.clone();
            spec.network = p.network.clone();
            image.clone()
        }
        (None, None) => return Err(SourceError::NoSource),
    };
    ImageRef::parse(&spec.image)?;
    for (k, v) in p.env.iter().chain(&p.secret_env) {
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        spec.env.push(format!("{k}={v}"));
    }
    spec.labels = HashMap::from([("io.refit.migration".to_string(), source.clone())]);
    Ok(Source {
        source,
        spec,
        secrets,
    })
}

/// `NAME,type=env,target=VAR` as (NAME, VAR); None for a secret mounted as a file, podman's
/// default type. The variable defaults to the secret's name, as podman has it.
fn env_secret(entry: &str) -> Option<EnvSecret> {
    let mut parts = entry.split(',');
    let name = parts.next()?.trim().to_string();
    let mut is_env = false;
    let mut target = name.clone();
    for opt in parts {
        match opt.trim().split_once('=') {
            Some(("type", "env")) => is_env = true,
            Some(("target", t)) => target = t.to_string(),
            _ => {}
        }
    }
    is_env.then_some(EnvSecret {
        secret: name,
        variable: target,
    })
}

/// Quadlet names the podman volume of `data.volume` `systemd-data`.
fn quadlet_volume(v: &str) -> String {
    match v.split_once(':') {
        Some((src, rest)) => match src.strip_suffix(".volume") {
            Some(stem) => format!("systemd-{stem}:{rest}"),
            None => v.to_string(),
        },
        None => v.to_string(),
    }
}

/// Quadlet names the podman network of `app.network` `systemd-app`.
fn quadlet_network(n: &str) -> String {
    match n.strip_suffix(".network") {
        Some(stem) => format!("systemd-{stem}"),
        None => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::put_file;

    #[test]
    fn a_unit_whose_image_is_an_image_unit_runs_that_units_image() {
        let q = tempfile::tempdir().expect("tmp");
        put_file(
            q.path(),
            "db.container",
            "[Container]\nImage=db.image\nVolume=data.volume:/var/lib/db\n",
        );
        put_file(
            q.path(),
            "db.image",
            "[Image]\nImage=registry.example.com/db:17\n",
        );
        let m = Migration {
            unit: Some("db".into()),
            ..Migration::default()
        };
        let s = oneoff(&m, q.path(), None, None).expect("resolves");
        assert_eq!(s.spec.image, "registry.example.com/db:17");
        assert_eq!(s.spec.volumes, ["systemd-data:/var/lib/db"]);
        std::fs::remove_file(q.path().join("db.image")).expect("rm");
        let e = oneoff(&m, q.path(), None, None)
            .err()
            .expect("no image unit");
        assert!(e.to_string().contains("db.image"), "{e}");
    }
}
