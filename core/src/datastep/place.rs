//! Where a data step reads and writes: the image and the data volume of the database's unit,
//! as the installed text has them (the old place) and as the flow's staged text has them (the
//! new place); and what the old and new images said about the cluster (`probe`).

use super::DataStepError;
use crate::unit::UnitFile;

/// An image and the volume (`SOURCE`, a podman volume or a host path) mounted at the data dir.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Place {
    pub image: String,
    pub volume: String,
}

/// The place a unit text gives the data dir `data_dir`.
pub fn of_text(text: &str, data_dir: &str, what: &str) -> Result<Place, DataStepError> {
    let u = UnitFile::parse(text).map_err(|e| DataStepError::Unit {
        what: what.to_string(),
        detail: e.to_string(),
    })?;
    let image = u
        .value("Container", "Image")
        .ok_or_else(|| DataStepError::Unit {
            what: what.to_string(),
            detail: "no Image= in [Container]".to_string(),
        })?
        .to_string();
    let volume = u
        .values("Container", "Volume")
        .filter_map(|v| {
            let mut parts = v.splitn(3, ':');
            let source = parts.next()?;
            (parts.next()? == data_dir).then(|| quadlet_volume(source))
        })
        .next()
        .ok_or_else(|| DataStepError::Unit {
            what: what.to_string(),
            detail: format!(
                "no Volume= mounted at {data_dir}; the data dir must be a volume so the new major can have one of its own"
            ),
        })?;
    Ok(Place { image, volume })
}

/// Quadlet names the podman volume of `data.volume` `systemd-data`.
fn quadlet_volume(source: &str) -> String {
    source
        .strip_suffix(".volume")
        .map_or_else(|| source.to_string(), |stem| format!("systemd-{stem}"))
}

/// The results a phase of the step's script printed, as `refit-data-step: KEY=VALUE` lines.
pub fn said<'a>(output: &'a str, key: &str) -> Option<&'a str> {
    output.lines().find_map(|l| {
        l.trim()
            .strip_prefix("refit-data-step: ")?
            .strip_prefix(key)?
            .strip_prefix('=')
    })
}

/// What the old image found in the old volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OldCluster {
    pub major: u32,
    pub size_kb: u64,
    pub avail_kb: u64,
}

impl OldCluster {
    pub fn from_output(output: &str) -> Option<Self> {
        Some(OldCluster {
            major: said(output, "major")?.parse().ok()?,
            size_kb: said(output, "size_kb")?.parse().ok()?,
            avail_kb: said(output, "avail_kb")?.parse().ok()?,
        })
    }
}

/// How the new cluster is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    PgUpgrade,
    Dump,
}

/// How pg_upgrade moves the data files of the private copy into the new cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transfer {
    Link,
    Copy,
    Clone,
}

/// What the old major's binaries and libraries take in the scratch dir, at most.
const BINARIES_KB: u64 = 128 * 1024;

/// The space the step needs on the volumes' file system, at its peak, for a cluster of
/// `size_kb`. Every method first makes a private copy of the old cluster (the old one is only
/// read); `link` and `clone` then share that copy's files with the new cluster, `copy` doubles
/// them; a dump is at most the size of the data it holds, beside the copy until the copy goes.
pub fn needed_kb(method: Method, transfer: Transfer, size_kb: u64) -> u64 {
    match (method, transfer) {
        (Method::PgUpgrade, Transfer::Link | Transfer::Clone) => size_kb + BINARIES_KB,
        (Method::PgUpgrade, Transfer::Copy) => 2 * size_kb + BINARIES_KB,
        (Method::Dump, _) => 2 * size_kb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_is_the_image_and_the_volume_at_the_data_dir() {
        let text = "[Container]\nImage=r/pg:15\nVolume=logs:/var/log\nVolume=pg-15:/var/lib/postgresql/data:Z\n";
        let p = of_text(text, "/var/lib/postgresql/data", "installed").expect("place");
        assert_eq!(p.image, "r/pg:15");
        assert_eq!(p.volume, "pg-15");
        let q = of_text(
            "[Container]\nImage=r/pg:17\nVolume=pg.volume:/data\n",
            "/data",
            "staged",
        )
        .expect("place");
        assert_eq!(q.volume, "systemd-pg");
    }

    #[test]
    fn a_unit_without_a_data_volume_is_refused_by_name() {
        let e = of_text(
            "[Container]\nImage=r/pg:15\n",
            "/data",
            "installed pg.container",
        )
        .expect_err("no volume");
        let msg = e.to_string();
        assert!(
            msg.contains("installed pg.container") && msg.contains("/data"),
            "{msg}"
        );
    }

    #[test]
    fn the_probe_is_read_from_its_lines_among_others() {
        let out = "noise\nrefit-data-step: major=15\nrefit-data-step: size_kb=4096\nrefit-data-step: avail_kb=99\n";
        assert_eq!(
            OldCluster::from_output(out),
            Some(OldCluster {
                major: 15,
                size_kb: 4096,
                avail_kb: 99
            })
        );
        assert_eq!(OldCluster::from_output("refit-data-step: major=15\n"), None);
    }

    #[test]
    fn copy_needs_twice_the_cluster_link_once() {
        let link = needed_kb(Method::PgUpgrade, Transfer::Link, 1000);
        let copy = needed_kb(Method::PgUpgrade, Transfer::Copy, 1000);
        assert_eq!(copy - link, 1000);
        assert_eq!(needed_kb(Method::Dump, Transfer::Link, 1000), 2000);
    }
}
