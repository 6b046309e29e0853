//! `registries.conf` and its drop-ins, as podman reads them for a pull by tag: which endpoints
//! to ask, in order (the mirrors of the longest matching `[[registry]]` prefix, then its
//! location), and which of them speak plain HTTP. A lookup that asked only the named registry
//! would see a different image than podman pulls on a mirrored site.

use super::Location;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One place to ask for a tag: a registry host and the repository there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub registry: String,
    pub repository: String,
    /// Plain HTTP, or TLS unverified, is allowed (`insecure = true`).
    pub insecure: bool,
    pub mirror: bool,
}

impl Endpoint {
    /// `REGISTRY/REPOSITORY`, over TLS, the registry itself (not a mirror).
    fn at(name: &str) -> Endpoint {
        let (registry, repository) = name.split_once('/').unwrap_or((name, ""));
        Endpoint {
            registry: registry.to_string(),
            repository: repository.to_string(),
            insecure: false,
            mirror: false,
        }
    }

    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Conf {
    #[serde(default)]
    registry: Vec<Entry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Entry {
    prefix: Option<String>,
    location: Option<String>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    mirror: Vec<Mirror>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Mirror {
    location: String,
    #[serde(default)]
    insecure: bool,
    /// `all` (the default), `digest-only` or `tag-only`.
    pull_from_mirror: Option<String>,
}

impl Entry {
    fn prefix(&self) -> &str {
        self.prefix
            .as_deref()
            .or(self.location.as_deref())
            .unwrap_or("")
    }
}

/// The host's registry settings: every `[[registry]]` of the main file and its drop-ins, a
/// later file's entry replacing an earlier one of the same prefix, as podman merges them.
#[derive(Debug, Clone, Default)]
pub struct RegistriesConf {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{image} is blocked by registries.conf ({prefix}); podman would refuse to pull it too: change the reference, or the [[registry]] entry"
)]
pub struct Blocked {
    pub image: String,
    pub prefix: String,
}

/// `ETC/registries.conf`, then `ETC/registries.conf.d/*.conf` in name order: the files podman
/// reads, a later one overriding an earlier one. Some may not exist.
pub(super) fn files(etc: &Path) -> Vec<PathBuf> {
    let mut files = vec![etc.join("registries.conf")];
    if let Ok(dir) = std::fs::read_dir(etc.join("registries.conf.d")) {
        let mut dropins: Vec<_> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        dropins.sort();
        files.extend(dropins);
    }
    files
}

impl RegistriesConf {
    /// `ETC/registries.conf`, then `ETC/registries.conf.d/*.conf` in name order. A file that
    /// does not parse is skipped: podman's pulls would report it.
    pub fn read(etc: &Path) -> Self {
        let texts: Vec<String> = files(etc)
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect();
        Self::parse(texts.iter().map(String::as_str))
    }

    pub fn parse<'t>(texts: impl IntoIterator<Item = &'t str>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for conf in texts
            .into_iter()
            .filter_map(|t| toml::from_str::<Conf>(t).ok())
        {
            for e in conf.registry {
                entries.retain(|old| old.prefix() != e.prefix());
                entries.push(e);
            }
        }
        RegistriesConf { entries }
    }

    /// The endpoints a tag of `loc` is asked at, in podman's order: each mirror that serves
    /// tags, then the (rewritten) location unless it is blocked.
    pub fn endpoints(&self, loc: &Location) -> Result<Vec<Endpoint>, Blocked> {
        let name = loc.name();
        let Some(entry) = self.matching(&name) else {
            return Ok(vec![Endpoint::at(&name)]);
        };
        // What follows the prefix (`/repo`), put after each mirror's and the location's own.
        let rest = if entry.prefix().starts_with("*.") {
            name.split_once('/').map_or("", |(_, r)| r).to_string()
        } else {
            name[entry.prefix().len()..]
                .trim_start_matches('/')
                .to_string()
        };
        let join = |base: &str| {
            if rest.is_empty() {
                base.to_string()
            } else {
                format!("{base}/{rest}")
            }
        };
        let mut out: Vec<Endpoint> = if entry.mirror_by_digest_only {
            Vec::new()
        } else {
            entry
                .mirror
                .iter()
                .filter(|m| m.pull_from_mirror.as_deref() != Some("digest-only"))
                .map(|m| Endpoint {
                    insecure: m.insecure,
                    mirror: true,
                    ..Endpoint::at(&join(&m.location))
                })
                .collect()
        };
        if entry.blocked {
            if out.is_empty() {
                return Err(Blocked {
                    image: name,
                    prefix: entry.prefix().to_string(),
                });
            }
            return Ok(out);
        }
        let location = match (&entry.location, entry.prefix().starts_with("*.")) {
            (Some(l), false) if !l.is_empty() => join(l),
            _ => name.clone(),
        };
        out.push(Endpoint {
            insecure: entry.insecure,
            ..Endpoint::at(&location)
        });
        Ok(out)
    }

    /// The entry of the longest prefix that matches `name` at a path boundary; `*.example.com`
    /// matches any host under example.com.
    fn matching(&self, name: &str) -> Option<&Entry> {
        let host = name.split('/').next().unwrap_or(name);
        self.entries
            .iter()
            .filter(|e| {
                let p = e.prefix();
                match p.strip_prefix("*.") {
                    Some(domain) => host.ends_with(&format!(".{domain}")),
                    None => {
                        !p.is_empty()
                            && name.starts_with(p)
                            && matches!(name.as_bytes().get(p.len()), None | Some(b'/'))
                    }
                }
            })
            .max_by_key(|e| e.prefix().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(r: &str) -> Location {
        Location::of(&crate::podman::ImageRef::parse(r).expect("reference"))
    }

    fn names(conf: &RegistriesConf, r: &str) -> Vec<(String, bool, bool)> {
        conf.endpoints(&loc(r))
            .expect("not blocked")
            .into_iter()
            .map(|e| (e.name(), e.insecure, e.mirror))
            .collect()
    }

    const MAIN: &str = r#"
unqualified-search-registries = ["docker.io"]
[[registry]]
location = "127.0.0.1:5000"
insecure = true

[[registry]]
prefix = "mirror.refit.test"
location = "mirror.refit.test"
[[registry.mirror]]
location = "127.0.0.1:5000"
insecure = true

[[registry]]
prefix = "mirror.refit.test/private"
location = "mirror.refit.test/private"
[[registry.mirror]]
location = "127.0.0.1:5009/gone"
[[registry.mirror]]
location = "127.0.0.1:5001"
insecure = true
"#;

    #[test]
    fn mirrors_come_first_then_the_location_for_the_longest_prefix() {
        let c = RegistriesConf::parse([MAIN]);
        assert_eq!(
            names(&c, "mirror.refit.test/svc:1.0"),
            [
                ("127.0.0.1:5000/svc".into(), true, true),
                ("mirror.refit.test/svc".into(), false, false)
            ]
        );
        assert_eq!(
            names(&c, "mirror.refit.test/private/svc:1.0"),
            [
                ("127.0.0.1:5009/gone/svc".into(), false, true),
                ("127.0.0.1:5001/svc".into(), true, true),
                ("mirror.refit.test/private/svc".into(), false, false)
            ],
            "in order, each mirror's own insecure"
        );
        assert_eq!(
            names(&c, "127.0.0.1:5000/svc:1.0"),
            [("127.0.0.1:5000/svc".into(), true, false)]
        );
        assert_eq!(
            names(&c, "mirror.refit.testing/svc:1"),
            [("mirror.refit.testing/svc".into(), false, false)],
            "a prefix matches at a path boundary only"
        );
        assert_eq!(
            names(&c, "quay.io/a/b:1"),
            [("quay.io/a/b".into(), false, false)]
        );
    }

    #[test]
    fn rewrites_wildcards_digest_only_mirrors_and_blocked_registries() {
        let c = RegistriesConf::parse([r#"
[[registry]]
prefix = "example.com/team"
location = "internal.example.net/mirror/team"
[[registry.mirror]]
location = "cache.local/team"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tags.local/team"
pull-from-mirror = "tag-only"

[[registry]]
prefix = "*.corp.test"
insecure = true
[[registry.mirror]]
location = "cache.local"

[[registry]]
location = "digests.test"
mirror-by-digest-only = true
[[registry.mirror]]
location = "cache.local"

[[registry]]
location = "blocked.test"
blocked = true
"#]);
        assert_eq!(
            names(&c, "example.com/team/app:2"),
            [
                ("tags.local/team/app".into(), false, true),
                ("internal.example.net/mirror/team/app".into(), false, false)
            ],
            "a digest-only mirror is not asked for a tag"
        );
        assert_eq!(
            names(&c, "reg.corp.test/app:2"),
            [
                ("cache.local/app".into(), false, true),
                ("reg.corp.test/app".into(), true, false)
            ]
        );
        assert_eq!(
            names(&c, "digests.test/app:2"),
            [("digests.test/app".into(), false, false)]
        );
        assert!(c.endpoints(&loc("blocked.test/app:1")).is_err());
    }

    #[test]
    fn a_later_dropin_replaces_an_entry_of_the_same_prefix() {
        let c = RegistriesConf::parse([
            MAIN,
            "[[registry]]\nlocation = \"127.0.0.1:5000\"\ninsecure = false\n",
            "not toml at all [",
        ]);
        assert_eq!(
            names(&c, "127.0.0.1:5000/svc:1.0"),
            [("127.0.0.1:5000/svc".into(), false, false)]
        );
        assert_eq!(names(&c, "mirror.refit.test/svc:1.0").len(), 2);
    }

    #[test]
    fn reads_the_main_file_and_conf_dropins() -> Result<(), Box<dyn std::error::Error>> {
        let etc = tempfile::tempdir()?;
        std::fs::write(etc.path().join("registries.conf"), MAIN)?;
        std::fs::create_dir(etc.path().join("registries.conf.d"))?;
        std::fs::write(
            etc.path().join("registries.conf.d/90-local.conf"),
            "[[registry]]\nlocation = \"127.0.0.1:6000\"\ninsecure = true\n",
        )?;
        std::fs::write(
            etc.path().join("registries.conf.d/91-ignored.txt"),
            "[[registry]]\nlocation = \"127.0.0.1:7000\"\ninsecure = true\n",
        )?;
        let c = RegistriesConf::read(etc.path());
        assert_eq!(
            names(&c, "127.0.0.1:6000/a:1"),
            [("127.0.0.1:6000/a".into(), true, false)]
        );
        assert_eq!(
            names(&c, "127.0.0.1:7000/a:1"),
            [("127.0.0.1:7000/a".into(), false, false)]
        );
        Ok(())
    }
}
