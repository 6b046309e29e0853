//! Short names as podman resolves them for a pull (containers-registries.conf(5), "Short-Name
//! Aliasing"): a name with no registry (`foreman-db`, `team/app`) goes to its alias when one is
//! set, else to the unqualified-search registries. Aliases come from the `[aliases]` tables of
//! `registries.conf` and its drop-ins, a later file's entry replacing an earlier one, and root's
//! machine-written cache `short-name-aliases.conf` over them all. What comes out are fully
//! qualified names; their mirrors and `insecure` flags are `conf`'s business.
//!
//! refit never has a terminal (an Ansible module, podman's service behind it), so this is what
//! podman does for a pull without one. Several search registries and no alias: with
//! `short-name-mode = "enforcing"` podman refuses, as here; with `permissive` (its default) or
//! `disabled` it tries each registry in order and takes the first that has the image, and the
//! lookup asks them in that order too. No alias is ever recorded: podman records one only after
//! prompting. The deprecated v1 format (`[registries.search]`) is not read, as in `conf`.

use super::Location;
use super::location::names_a_registry;
use crate::podman::ImageRef;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The cache podman (as root) writes an alias to after a prompt, under `/var/cache/containers`.
pub(super) const ALIAS_CACHE: &str = "short-name-aliases.conf";

#[derive(Debug, Clone, thiserror::Error)]
pub enum ShortNameError {
    #[error(
        "{file} is not valid TOML ({detail}); podman refuses short names while it is there: fix the file, or remove it"
    )]
    Unparsable { file: PathBuf, detail: String },
    #[error(
        "short-name alias \"{name}\" = \"{value}\" in {file}: {why}; podman refuses short names while it is there: write it as \"NAME\" = \"REGISTRY/REPOSITORY\", with no registry in the name and no tag or digest on either side, or remove it"
    )]
    BadAlias {
        file: PathBuf,
        name: String,
        value: String,
        why: &'static str,
    },
    #[error(
        "short-name-mode = \"{value}\" in {file} is not \"enforcing\", \"permissive\" or \"disabled\"; podman refuses short names while it is there: fix it, or remove it"
    )]
    BadMode { file: PathBuf, value: String },
    #[error(
        "{image} names no registry and matches no short-name alias, and {} sets no unqualified-search-registries; podman refuses to pull it too: write the full name (REGISTRY/REPOSITORY:TAG), or set an alias for \"{name}\" under [aliases] in a file in /etc/containers/registries.conf.d/",
        origin.as_ref().map_or("no registries.conf".to_string(), |f| f.display().to_string())
    )]
    NoSearch {
        image: String,
        name: String,
        origin: Option<PathBuf>,
    },
    #[error(
        "{image} names no registry and matches no short-name alias, and with short-name-mode = \"enforcing\" ({mode_file}) and several unqualified-search-registries ({registries}) podman refuses to choose without a terminal; write the full name (REGISTRY/REPOSITORY:TAG), or set an alias for \"{name}\" under [aliases] in a file in /etc/containers/registries.conf.d/"
    )]
    Ambiguous {
        image: String,
        name: String,
        registries: String,
        mode_file: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Enforcing,
    Permissive,
    Disabled,
}

/// The part of a registries.conf file (or of the alias cache) that short names depend on.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    /// Sorted, so that of several bad entries the same one is reported each time.
    #[serde(default)]
    aliases: BTreeMap<String, String>,
    /// Unset is not the same as empty: a drop-in that sets `[]` clears the list.
    unqualified_search_registries: Option<Vec<String>>,
    short_name_mode: Option<String>,
}

/// The host's short-name settings, merged across its files as podman merges them.
#[derive(Debug, Clone, Default)]
pub struct ShortNames {
    /// By short name; None where a later file erased the alias with `""`.
    aliases: HashMap<String, Option<String>>,
    /// The search registries, and the file that set them last.
    search: Option<(Vec<String>, PathBuf)>,
    mode: Option<(Mode, PathBuf)>,
    /// The first thing podman would refuse the configuration for: every short name then fails.
    broken: Option<ShortNameError>,
}

impl ShortNames {
    /// `ETC/registries.conf`, its drop-ins in name order, then the alias cache `CACHE` (whose
    /// aliases win). Files that do not exist, or cannot be read, are left out.
    pub fn read(etc: &Path, cache: &Path) -> Self {
        let mut names = ShortNames::default();
        for file in super::conf::files(etc) {
            if let Ok(text) = std::fs::read_to_string(&file) {
                names.merge(&file, &text, false);
            }
        }
        if let Ok(text) = std::fs::read_to_string(cache) {
            names.merge(cache, &text, true);
        }
        names
    }

    /// Adds one file over what is there. The cache holds aliases only: podman reads nothing
    /// else from it.
    fn merge(&mut self, file: &Path, text: &str, cache: bool) {
        let parsed = match toml::from_str::<File>(text) {
            Ok(f) => f,
            Err(e) => {
                self.note(ShortNameError::Unparsable {
                    file: file.to_path_buf(),
                    detail: e.message().to_string(),
                });
                return;
            }
        };
        for (name, value) in parsed.aliases {
            let why = name_problem(&name).or(if value.is_empty() {
                None
            } else {
                value_problem(&value)
            });
            if let Some(why) = why {
                self.note(ShortNameError::BadAlias {
                    file: file.to_path_buf(),
                    name,
                    value,
                    why,
                });
                continue;
            }
            // `""` erases an alias an earlier file set, so the search registries decide again.
            let value = (!value.is_empty()).then_some(value);
            self.aliases.insert(name, value);
        }
        if cache {
            return;
        }
        if let Some(registries) = parsed.unqualified_search_registries {
            self.search = Some((registries, file.to_path_buf()));
        }
        match parsed.short_name_mode.as_deref() {
            None | Some("") => {}
            Some("enforcing") => self.mode = Some((Mode::Enforcing, file.to_path_buf())),
            Some("permissive") => self.mode = Some((Mode::Permissive, file.to_path_buf())),
            Some("disabled") => self.mode = Some((Mode::Disabled, file.to_path_buf())),
            Some(other) => self.note(ShortNameError::BadMode {
                file: file.to_path_buf(),
                value: other.to_string(),
            }),
        }
    }

    fn note(&mut self, e: ShortNameError) {
        self.broken.get_or_insert(e);
    }

    /// The fully qualified names a pull of `loc` tries, in order: `loc` itself when it names a
    /// registry; else its alias; else each search registry's `REGISTRY/NAME` (see the module
    /// doc for several). Tag and digest carry over.
    pub fn candidates(&self, loc: &Location) -> Result<Vec<Location>, ShortNameError> {
        let Some(name) = &loc.short else {
            return Ok(vec![loc.clone()]);
        };
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let at = |qualified: &str| Location {
            digest: loc.digest.clone(),
            ..Location::qualified(qualified, &loc.tag)
        };
        if let Some(Some(alias)) = self.aliases.get(name) {
            return Ok(vec![at(alias)]);
        }
        let image = format!("{name}:{}", loc.tag);
        let (registries, origin) = match &self.search {
            Some((r, f)) => (r.as_slice(), Some(f.clone())),
            None => (&[][..], None),
        };
        match (registries, &self.mode) {
            ([], _) => Err(ShortNameError::NoSearch {
                image,
                name: name.clone(),
                origin,
            }),
            ([_, _, ..], Some((Mode::Enforcing, mode_file))) => Err(ShortNameError::Ambiguous {
                image,
                name: name.clone(),
                registries: registries.join(", "),
                mode_file: mode_file.clone(),
            }),
            _ => Ok(registries
                .iter()
                .map(|r| at(&format!("{r}/{name}")))
                .collect()),
        }
    }
}

/// Why `name` cannot be an alias's name (podman's rule): it must be a short name, with no tag
/// or digest.
fn name_problem(name: &str) -> Option<&'static str> {
    if ImageRef::parse(name).is_err() {
        return Some("the name is not an image name");
    }
    if name.contains('@') {
        return Some("the name carries a digest");
    }
    if has_tag(name) {
        return Some("the name carries a tag");
    }
    match name.split_once('/') {
        Some((first, _)) if names_a_registry(first) => Some("the name names a registry"),
        _ => None,
    }
}

/// Why `value` cannot be an alias's value: it must name a registry (a host with a `.` or a
/// port, or `localhost`) and a repository, with no tag or digest.
fn value_problem(value: &str) -> Option<&'static str> {
    if ImageRef::parse(value).is_err() {
        return Some("the value is not an image name");
    }
    if value.contains('@') {
        return Some("the value carries a digest");
    }
    if has_tag(value) {
        return Some("the value carries a tag");
    }
    match value.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => None,
        _ => Some("the value names no registry"),
    }
}

/// A tag's `:` comes after the last `/`; one before it is a registry's port.
fn has_tag(name: &str) -> bool {
    name.rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(r: &str) -> Location {
        Location::of(&ImageRef::parse(r).expect("reference"))
    }

    /// Each file as (name, text), in the order podman reads them; the cache last.
    fn merged(files: &[(&str, &str)], cache: Option<&str>) -> ShortNames {
        let mut names = ShortNames::default();
        for (file, text) in files {
            names.merge(Path::new(file), text, false);
        }
        if let Some(text) = cache {
            names.merge(
                Path::new("/var/cache/containers/short-name-aliases.conf"),
                text,
                true,
            );
        }
        names
    }

    fn resolved(names: &ShortNames, r: &str) -> Vec<String> {
        names
            .candidates(&loc(r))
            .expect("resolves")
            .iter()
            .map(|l| format!("{}:{}", l.name(), l.tag))
            .collect()
    }

    const MAIN: &str = r#"
unqualified-search-registries = ["docker.io"]
[aliases]
"foreman-db" = "quay.io/foreman/db"
"team/app" = "127.0.0.1:5000/team/app"
"erased" = "quay.io/erased"
"alpine" = "docker.io/alpine"
"#;

    #[test]
    fn an_alias_wins_over_the_search_registries_and_keeps_the_tag() {
        let n = merged(&[("/etc/containers/registries.conf", MAIN)], None);
        assert_eq!(resolved(&n, "foreman-db:1.0"), ["quay.io/foreman/db:1.0"]);
        assert_eq!(resolved(&n, "team/app"), ["127.0.0.1:5000/team/app:latest"]);
        assert_eq!(
            resolved(&n, "alpine:3"),
            ["docker.io/library/alpine:3"],
            "docker.io values get library/, as podman normalizes them"
        );
        assert_eq!(
            resolved(&n, "other:2"),
            ["docker.io/library/other:2"],
            "no alias: the one search registry"
        );
        assert_eq!(
            resolved(&n, "quay.io/foreman-db:1"),
            ["quay.io/foreman-db:1"],
            "a full name is not a short name"
        );
    }

    #[test]
    fn later_dropins_override_per_alias_and_the_cache_overrides_them_all() {
        let n = merged(
            &[
                ("/etc/containers/registries.conf", MAIN),
                (
                    "/etc/containers/registries.conf.d/50-a.conf",
                    "[aliases]\n\"foreman-db\" = \"registry.example/db\"\n\"erased\" = \"\"\n",
                ),
                (
                    "/etc/containers/registries.conf.d/60-b.conf",
                    "unqualified-search-registries = [\"quay.io\"]\n",
                ),
            ],
            Some("[aliases]\n\"team/app\" = \"cache.example/team/app\"\n"),
        );
        assert_eq!(resolved(&n, "foreman-db:1"), ["registry.example/db:1"]);
        assert_eq!(
            resolved(&n, "erased:1"),
            ["quay.io/erased:1"],
            "erased by \"\": the search registry of the later drop-in"
        );
        assert_eq!(resolved(&n, "team/app:2"), ["cache.example/team/app:2"]);
        let n = merged(
            &[("/etc/containers/registries.conf", MAIN)],
            Some("[aliases]\n\"foreman-db\" = \"\"\n"),
        );
        assert_eq!(
            resolved(&n, "foreman-db:1"),
            ["docker.io/library/foreman-db:1"],
            "an empty cache entry hides the registries.conf alias, as in podman"
        );
    }

    #[test]
    fn several_search_registries_are_tried_in_order_unless_enforcing() {
        let search = "unqualified-search-registries = [\"registry.example\", \"docker.io\"]\n";
        let n = merged(&[("/etc/containers/registries.conf", search)], None);
        assert_eq!(
            resolved(&n, "app:1"),
            ["registry.example/app:1", "docker.io/library/app:1"],
            "permissive by default: every registry, in order"
        );
        let disabled = format!("{search}short-name-mode = \"disabled\"\n");
        let n = merged(&[("/etc/containers/registries.conf", &disabled)], None);
        assert_eq!(resolved(&n, "app:1").len(), 2);
        let n = merged(
            &[
                ("/etc/containers/registries.conf", search),
                (
                    "/etc/containers/registries.conf.d/10-mode.conf",
                    "short-name-mode = \"enforcing\"\n",
                ),
            ],
            None,
        );
        let e = n.candidates(&loc("app:1")).expect_err("ambiguous");
        let msg = e.to_string();
        assert!(matches!(e, ShortNameError::Ambiguous { .. }), "{msg}");
        assert!(
            msg.contains("10-mode.conf") && msg.contains("registry.example, docker.io"),
            "{msg}"
        );
        // Top-level keys go before MAIN's [aliases] table.
        let one = format!("short-name-mode = \"enforcing\"\n{MAIN}");
        let n = merged(&[("/etc/containers/registries.conf", &one)], None);
        assert_eq!(
            resolved(&n, "app:1"),
            ["docker.io/library/app:1"],
            "one registry is no ambiguity"
        );
    }

    #[test]
    fn no_search_registries_and_no_alias_is_refused_as_podman_does() {
        let n = merged(&[], None);
        let e = n.candidates(&loc("app:1")).expect_err("nowhere to look");
        assert!(e.to_string().contains("no registries.conf"), "{e}");
        let n = merged(
            &[
                ("/etc/containers/registries.conf", MAIN),
                (
                    "/etc/containers/registries.conf.d/90-none.conf",
                    "unqualified-search-registries = []\n",
                ),
            ],
            None,
        );
        let e = n.candidates(&loc("app:1")).expect_err("cleared");
        assert!(matches!(e, ShortNameError::NoSearch { .. }), "{e}");
        assert!(e.to_string().contains("90-none.conf"), "{e}");
        assert_eq!(
            resolved(&n, "foreman-db:1"),
            ["quay.io/foreman/db:1"],
            "an alias needs no search registry"
        );
    }

    #[test]
    fn a_bad_entry_refuses_short_names_and_names_its_file() {
        for (text, why) in [
            ("[aliases]\n\"app\" = \"app2\"\n", "names no registry"),
            (
                "[aliases]\n\"app\" = \"quay.io/app:1\"\n",
                "value carries a tag",
            ),
            (
                "[aliases]\n\"quay.io/app\" = \"quay.io/app\"\n",
                "names a registry",
            ),
            (
                "[aliases]\n\"app:1\" = \"quay.io/app\"\n",
                "name carries a tag",
            ),
            ("short-name-mode = \"strict\"\n", "strict"),
            ("[aliases\n", "not valid TOML"),
        ] {
            let n = merged(
                &[
                    ("/etc/containers/registries.conf", MAIN),
                    ("/etc/containers/registries.conf.d/70-bad.conf", text),
                ],
                None,
            );
            let msg = n
                .candidates(&loc("foreman-db:1"))
                .expect_err(text)
                .to_string();
            assert!(msg.contains("70-bad.conf") && msg.contains(why), "{msg}");
            assert_eq!(
                resolved(&n, "quay.io/a:1"),
                ["quay.io/a:1"],
                "a full name does not depend on it"
            );
        }
    }

    #[test]
    fn reads_the_main_file_its_dropins_and_the_cache() -> Result<(), Box<dyn std::error::Error>> {
        let etc = tempfile::tempdir()?;
        let cache = tempfile::tempdir()?;
        std::fs::write(etc.path().join("registries.conf"), MAIN)?;
        std::fs::create_dir(etc.path().join("registries.conf.d"))?;
        std::fs::write(
            etc.path().join("registries.conf.d/60-test-alias.conf"),
            "[aliases]\n\"t-alias\" = \"127.0.0.1:5000/t-alias\"\n",
        )?;
        std::fs::write(
            etc.path().join("registries.conf.d/61-ignored.txt"),
            "[aliases]\n\"t-alias\" = \"ignored.example/t-alias\"\n",
        )?;
        std::fs::write(
            cache.path().join(ALIAS_CACHE),
            "[aliases]\n\"foreman-db\" = \"cache.example/db\"\n",
        )?;
        let n = ShortNames::read(etc.path(), &cache.path().join(ALIAS_CACHE));
        assert_eq!(resolved(&n, "t-alias:1"), ["127.0.0.1:5000/t-alias:1"]);
        assert_eq!(resolved(&n, "foreman-db:1"), ["cache.example/db:1"]);
        let none = ShortNames::read(&etc.path().join("absent"), &cache.path().join("absent"));
        assert!(none.candidates(&loc("t-alias:1")).is_err());
        Ok(())
    }
}
