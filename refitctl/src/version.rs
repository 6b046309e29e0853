//! What `refitctl --version` says beyond its own version: which refit.containers collection
//! ansible-playbook will run, its version, and where it was taken from (the checkout refitctl
//! was built in, or a collection installed on the collections path). A refitctl and a
//! collection of different versions are the first thing to rule out when a run misbehaves.

use std::path::{Path, PathBuf};

/// Where the collection comes from.
#[derive(Debug, PartialEq, Eq)]
pub enum Source {
    /// The checkout refitctl runs from, with its modules built: refitctl puts it first on the
    /// collections path.
    Checkout(PathBuf),
    /// An installed collection: the first one on the collections path, as Ansible looks.
    Installed(PathBuf),
    /// None found on these paths.
    Missing(Vec<PathBuf>),
}

/// The text after `refitctl ` that `--version` prints.
pub fn text() -> String {
    let own = env!("CARGO_PKG_VERSION");
    let collection = match find() {
        Source::Checkout(dir) => format!(
            "collection refit.containers {}, from the checkout {}",
            checkout_version(&dir).unwrap_or_else(|| "(unknown version)".into()),
            dir.display()
        ),
        Source::Installed(dir) => format!(
            "collection refit.containers {}, installed in {}",
            installed_version(&dir).unwrap_or_else(|| "(unknown version)".into()),
            dir.display()
        ),
        Source::Missing(paths) => format!(
            "collection refit.containers: not installed in {}; install it with `ansible-galaxy collection install`",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        ),
    };
    format!("{own}\n{collection}")
}

/// The collection ansible-playbook will load for refitctl.
pub fn find() -> Source {
    if let Some(dir) = crate::playbook::checkout() {
        return Source::Checkout(dir);
    }
    let paths = collections_paths();
    paths
        .iter()
        .map(|p| p.join("ansible_collections/refit/containers"))
        .find(|d| d.join("MANIFEST.json").is_file())
        .map_or(Source::Missing(paths), Source::Installed)
}

/// The collections path as Ansible reads it: the environment, else the config file's
/// `collections_path`, else Ansible's default.
fn collections_paths() -> Vec<PathBuf> {
    let raw = ["ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .or_else(|| config_file().and_then(|f| config_paths(&f)))
        .unwrap_or_else(|| "~/.ansible/collections:/usr/share/ansible/collections".into());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    raw.split(':')
        .filter(|p| !p.is_empty())
        .map(|p| match (p.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(p),
        })
        .collect()
}

/// Ansible's config file, in its order: ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg,
/// /etc/ansible/ansible.cfg.
fn config_file() -> Option<String> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("ANSIBLE_CONFIG")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(PathBuf::from("ansible.cfg"));
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".ansible.cfg"));
    }
    candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
    candidates
        .iter()
        .find_map(|c| std::fs::read_to_string(c).ok())
}

/// `collections_path` (or the older `collections_paths`) of `[defaults]` in an ansible.cfg.
fn config_paths(text: &str) -> Option<String> {
    let mut in_defaults = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_defaults = line == "[defaults]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_defaults && matches!(key.trim(), "collections_path" | "collections_paths") {
            return Some(value.trim().to_string());
        }
    }
    None
}

/// `version:` of a checkout's galaxy.yml.
fn checkout_version(dir: &Path) -> Option<String> {
    let galaxy = std::fs::read_to_string(dir.join("galaxy.yml")).ok()?;
    galaxy
        .lines()
        .find_map(|l| l.strip_prefix("version:"))
        .map(|v| v.trim().to_string())
}

/// `collection_info.version` of an installed collection's MANIFEST.json.
fn installed_version(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    manifest["collection_info"]["version"]
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_files_collections_path_is_read_from_defaults_only() {
        let cfg = "[galaxy]\ncollections_path = /nope\n[defaults]\ninventory = x\ncollections_path = /a:/b\n";
        assert_eq!(config_paths(cfg).as_deref(), Some("/a:/b"));
        assert_eq!(config_paths("[defaults]\nforks = 5\n"), None);
    }

    #[test]
    fn an_installed_collections_version_is_its_manifests() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("MANIFEST.json"),
            r#"{"collection_info": {"namespace": "refit", "name": "containers", "version": "1.2.3"}}"#,
        )
        .expect("write");
        assert_eq!(installed_version(dir.path()).as_deref(), Some("1.2.3"));
    }

    #[test]
    fn a_checkouts_version_is_its_galaxy_yml() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let version = checkout_version(&repo).expect("galaxy.yml has a version");
        assert_eq!(
            version,
            env!("CARGO_PKG_VERSION"),
            "tools/version.sh keeps them equal"
        );
    }
}
