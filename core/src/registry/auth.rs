//! Registry credentials as podman finds them: an explicit auth file (`auth_file`, as podman's
//! `--authfile`), or podman's own lookup order. The values are secrets: nothing here prints
//! them, and an error about a file names the file and a position, never its contents.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A user and password for one registry (or namespace). Debug shows the user only.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({}, ********)", self.username)
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    #[error(
        "auth_file {0:?} holds a newline or NUL; give the path of one auth file on the target host"
    )]
    BadPath(String),
    #[error(
        "auth_file {path}: {source}; give the path of an auth file on the target host, as `podman login --authfile {path} REGISTRY` writes it"
    )]
    Unreadable {
        path: PathBuf,
        /// Shared: RegistryError, which carries this error, is Clone.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    #[error(
        "auth_file {path} is not an auth.json file: {detail}; write it with `podman login --authfile {path} REGISTRY`"
    )]
    Malformed { path: PathBuf, detail: String },
}

/// The credentials of every auth file read, in lookup order: the first file that has a login
/// for a registry decides, as in podman.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    files: Vec<HashMap<String, Login>>,
    /// Set when `auth_file` named the file: pulls then send its logins to podman, which uses
    /// them (and no other) for the registry and its mirrors alike.
    explicit: bool,
}

impl Credentials {
    /// The logins of `auth_file`, which must exist and parse; or, without it, of podman's own
    /// files that exist (an unreadable default file is skipped, as podman skips it).
    pub fn load(auth_file: Option<&Path>) -> Result<Self, AuthError> {
        if let Some(path) = auth_file {
            let shown = path.to_string_lossy();
            if shown.contains(['\n', '\r', '\0']) {
                return Err(AuthError::BadPath(shown.into_owned()));
            }
            let text = std::fs::read_to_string(path).map_err(|source| AuthError::Unreadable {
                path: path.to_path_buf(),
                source: source.into(),
            })?;
            let logins = parse(&text).map_err(|detail| AuthError::Malformed {
                path: path.to_path_buf(),
                detail,
            })?;
            return Ok(Credentials {
                files: vec![logins],
                explicit: true,
            });
        }
        let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
        let files = default_files(
            env("REGISTRY_AUTH_FILE"),
            env("XDG_CONFIG_HOME"),
            env("HOME"),
        )
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| parse(&t).ok())
        .collect();
        Ok(Credentials {
            files,
            explicit: false,
        })
    }

    /// The login for `name` (`REGISTRY/REPOSITORY`): per file, the most specific key first
    /// (`r.io/a/b`, `r.io/a`, `r.io`), as containers-auth.json(5) describes.
    pub fn for_name(&self, name: &str) -> Option<&Login> {
        self.files.iter().find_map(|logins| {
            let mut key = name;
            loop {
                if let Some(l) = logins.get(key) {
                    return Some(l);
                }
                key = key.rsplit_once('/')?.0;
            }
        })
    }

    /// The `X-Registry-Auth` value podman takes for a pull with several registries: base64url
    /// of `{"REGISTRY": {"username", "password"}}`. None unless `auth_file` was given: without
    /// it, podman's own lookup is the one to use, and podman does it itself.
    pub fn pull_header(&self) -> Option<String> {
        if !self.explicit {
            return None;
        }
        let map: serde_json::Map<String, serde_json::Value> = self
            .files
            .iter()
            .flatten()
            .map(|(k, l)| {
                (
                    k.clone(),
                    serde_json::json!({"username": l.username, "password": l.password}),
                )
            })
            .collect();
        Some(URL_SAFE.encode(serde_json::Value::Object(map).to_string()))
    }
}

/// podman's files, most specific first: `REGISTRY_AUTH_FILE` alone when set (podman takes it
/// as `--authfile`); else root's runtime file, the config dir's, then docker's.
fn default_files(
    registry_auth_file: Option<PathBuf>,
    xdg_config_home: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Vec<PathBuf> {
    if let Some(f) = registry_auth_file {
        return vec![f];
    }
    let mut files = vec![PathBuf::from("/run/containers/0/auth.json")];
    match (&xdg_config_home, &home) {
        (Some(x), _) => files.push(x.join("containers/auth.json")),
        (None, Some(h)) => files.push(h.join(".config/containers/auth.json")),
        (None, None) => {}
    }
    if let Some(h) = home {
        files.push(h.join(".docker/config.json"));
    }
    files
}

/// An auth file's logins by key, keys normalized as podman does (`https://` and docker's
/// `/v1/` suffix dropped, docker.io's aliases folded). Entries with no usable `auth` (a
/// credential helper's, an identity token) are left out.
fn parse(text: &str) -> Result<HashMap<String, Login>, String> {
    #[derive(Deserialize)]
    struct AuthFile {
        #[serde(default)]
        auths: HashMap<String, Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        auth: Option<String>,
    }
    // serde's messages quote the values they met; the values may be secrets, so only the
    // position is passed on.
    let file: AuthFile = serde_json::from_str(text).map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Io => "io",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "eof",
        };
        format!("{kind} error at line {} column {}", e.line(), e.column())
    })?;
    Ok(file
        .auths
        .into_iter()
        .filter_map(|(k, e)| Some((normalize(&k), decode(e.auth.as_deref()?)?)))
        .collect())
}

fn decode(auth: &str) -> Option<Login> {
    let raw = STANDARD.decode(auth.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some(Login {
        username: user.to_string(),
        password: password.to_string(),
    })
}

fn normalize(key: &str) -> String {
    let bare = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (host, rest) = bare.split_once('/').unwrap_or((bare, ""));
    let host = match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        h => h,
    };
    // docker's own keys carry its API path (`https://index.docker.io/v1/`): that is no namespace.
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest == "v1" || rest == "v2" {
        host.to_string()
    } else {
        format!("{host}/{rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        STANDARD.encode(s)
    }

    fn file(dir: &Path, name: &str, auths: serde_json::Value) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::json!({ "auths": auths }).to_string()).expect("write");
        p
    }

    #[test]
    fn the_most_specific_key_of_a_file_wins() -> Result<(), AuthError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = file(
            dir.path(),
            "auth.json",
            serde_json::json!({
                "r.io": {"auth": b64("all:pw1")},
                "r.io/team": {"auth": b64("team:pw2")},
                "https://index.docker.io/v1/": {"auth": b64("hub:pw3:with:colons")},
                "helper.io": {},
            }),
        );
        let c = Credentials::load(Some(&p))?;
        let user = |n: &str| c.for_name(n).map(|l| l.username.as_str());
        assert_eq!(user("r.io/team/app"), Some("team"));
        assert_eq!(user("r.io/other/app"), Some("all"));
        assert_eq!(user("r.io2/app"), None, "no prefix match across host names");
        assert_eq!(user("helper.io/app"), None, "no auth, no login");
        assert_eq!(
            c.for_name("docker.io/library/alpine")
                .map(|l| l.password.as_str()),
            Some("pw3:with:colons")
        );
        Ok(())
    }

    #[test]
    fn an_explicit_file_is_the_pull_header_and_the_default_lookup_is_podmans() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = file(
            dir.path(),
            "a.json",
            serde_json::json!({"127.0.0.1:5001": {"auth": b64("refit:s3cret")}}),
        );
        let c = Credentials::load(Some(&p)).expect("loads");
        let header = c.pull_header().expect("explicit file, a header");
        let sent: serde_json::Value =
            serde_json::from_slice(&URL_SAFE.decode(header).expect("base64url")).expect("json");
        assert_eq!(
            sent,
            serde_json::json!({"127.0.0.1:5001": {"username": "refit", "password": "s3cret"}})
        );
        assert_eq!(Credentials::default().pull_header(), None);
        assert!(!format!("{c:?}").contains("s3cret"), "Debug masks: {c:?}");
    }

    #[test]
    fn default_files_follow_podmans_order() {
        let home = Some(PathBuf::from("/root"));
        assert_eq!(
            default_files(Some("/x/auth.json".into()), None, home.clone()),
            [PathBuf::from("/x/auth.json")],
            "REGISTRY_AUTH_FILE alone"
        );
        assert_eq!(
            default_files(None, None, home.clone()),
            [
                "/run/containers/0/auth.json",
                "/root/.config/containers/auth.json",
                "/root/.docker/config.json"
            ]
            .map(PathBuf::from)
        );
        assert_eq!(
            default_files(None, Some("/cfg".into()), home)[1],
            PathBuf::from("/cfg/containers/auth.json")
        );
    }

    #[test]
    fn a_bad_file_is_named_and_its_contents_are_not_shown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = Credentials::load(Some(Path::new("/etc/a\nb.json"))).expect_err("newline");
        assert!(matches!(e, AuthError::BadPath(_)), "{e}");
        let missing = dir.path().join("none.json");
        let e = Credentials::load(Some(&missing)).expect_err("missing");
        assert!(matches!(e, AuthError::Unreadable { .. }), "{e}");
        assert!(e.to_string().contains("none.json"), "{e}");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"auths": {"r.io": "hunter2-secret"}}"#).expect("write");
        let e = Credentials::load(Some(&bad)).expect_err("malformed");
        let msg = e.to_string();
        assert!(msg.contains("bad.json") && msg.contains("line 1"), "{msg}");
        assert!(!msg.contains("hunter2"), "the value leaked: {msg}");
    }
}
