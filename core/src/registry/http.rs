//! The registry's HTTP API (distribution v2): a HEAD of the tag's manifest, with the bearer
//! token dance public registries want, and the credentials podman itself would use.

use super::{Location, Registry, RegistryError};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;
use ureq::http::Response;
use ureq::tls::{RootCerts, TlsConfig};

/// Every manifest type podman pulls; without them a registry may answer with an old schema.
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json";

const TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpRegistry {
    /// Registries `registries.conf` marks `insecure`: plain HTTP or unverified TLS is allowed.
    insecure: Vec<String>,
    /// `auth` values (base64 of USER:PASSWORD) by registry, from podman's auth files.
    auths: HashMap<String, String>,
}

impl HttpRegistry {
    /// This host's registry settings, as podman reads them.
    pub fn from_host() -> Self {
        HttpRegistry {
            insecure: insecure_registries(Path::new("/etc/containers")),
            auths: auth_files().iter().flat_map(|p| read_auths(p)).collect(),
        }
    }

    fn agent(verify: bool) -> ureq::Agent {
        let roots = if verify {
            RootCerts::PlatformVerifier
        } else {
            RootCerts::WebPki
        };
        let tls = TlsConfig::builder()
            .root_certs(roots)
            .disable_verification(!verify)
            .build();
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(TIMEOUT))
            .tls_config(tls)
            .build()
            .new_agent()
    }

    fn head(
        &self,
        agent: &ureq::Agent,
        url: &str,
        auth: Option<&str>,
    ) -> Result<Response<ureq::Body>, ureq::Error> {
        let mut req = agent.head(url).header("Accept", ACCEPT);
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        req.call()
    }

    /// Answers a 401's challenge: a bearer token from the realm, or basic credentials.
    fn authorize(&self, agent: &ureq::Agent, loc: &Location, challenge: &str) -> Option<String> {
        let basic = self.auths.get(&loc.registry).map(|a| format!("Basic {a}"));
        let Some(params) = challenge.strip_prefix("Bearer ") else {
            return basic;
        };
        let params = challenge_params(params);
        let realm = params.get("realm")?;
        let mut req = agent.get(realm.as_str()).query(
            "scope",
            params
                .get("scope")
                .cloned()
                .unwrap_or_else(|| format!("repository:{}:pull", loc.repository)),
        );
        if let Some(service) = params.get("service") {
            req = req.query("service", service.as_str());
        }
        if let Some(b) = &basic {
            req = req.header("Authorization", b.as_str());
        }
        #[derive(Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let mut resp = req.call().ok()?;
        let t: Token = resp.body_mut().read_json().ok()?;
        t.token.or(t.access_token).map(|t| format!("Bearer {t}"))
    }
}

impl Registry for HttpRegistry {
    fn digest(&self, loc: &Location) -> Result<String, RegistryError> {
        if let Some(d) = &loc.digest {
            return Ok(d.clone());
        }
        let host = if loc.registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            loc.registry.as_str()
        };
        let path = format!("/v2/{}/manifests/{}", loc.repository, loc.tag);
        let insecure = self.insecure.contains(&loc.registry);
        let unreachable = |detail: String| RegistryError::Unreachable {
            registry: loc.registry.clone(),
            image: format!("{}:{}", loc.name(), loc.tag),
            detail,
        };
        // An insecure registry may speak plain HTTP, or TLS with a certificate nobody signed.
        let tries: &[(&str, bool)] = if insecure {
            &[("https", false), ("http", false)]
        } else {
            &[("https", true)]
        };
        let mut last = String::new();
        for (scheme, verify) in tries {
            let agent = Self::agent(*verify);
            let url = format!("{scheme}://{host}{path}");
            let mut resp = match self.head(&agent, &url, None) {
                Ok(r) => r,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            if resp.status() == 401 {
                let challenge = header(&resp, "www-authenticate").unwrap_or_default();
                if let Some(auth) = self.authorize(&agent, loc, &challenge) {
                    resp = self
                        .head(&agent, &url, Some(&auth))
                        .map_err(|e| unreachable(e.to_string()))?;
                }
            }
            if !resp.status().is_success() {
                return Err(RegistryError::Refused {
                    registry: loc.registry.clone(),
                    image: format!("{}:{}", loc.name(), loc.tag),
                    status: resp.status().as_u16(),
                });
            }
            return header(&resp, "docker-content-digest")
                .ok_or_else(|| unreachable("its answer carries no Docker-Content-Digest".into()));
        }
        Err(unreachable(last))
    }
}

fn header(resp: &Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `realm="https://auth",service="registry",scope="repository:x:pull"` as a map.
fn challenge_params(s: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = s.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let (value, tail) = match after.strip_prefix('"') {
            Some(quoted) => quoted.split_once('"').unwrap_or((quoted, "")),
            None => after.split_once(',').unwrap_or((after, "")),
        };
        out.insert(key, value.to_string());
        rest = tail;
    }
    out
}

/// The registries `registries.conf` and its drop-ins mark `insecure = true`.
fn insecure_registries(etc: &Path) -> Vec<String> {
    #[derive(Deserialize, Default)]
    struct Conf {
        #[serde(default)]
        registry: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        location: Option<String>,
        #[serde(default)]
        insecure: bool,
    }
    let mut files = vec![etc.join("registries.conf")];
    if let Ok(dir) = std::fs::read_dir(etc.join("registries.conf.d")) {
        let mut dropins: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        dropins.sort();
        files.extend(dropins);
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .filter_map(|text| toml::from_str::<Conf>(&text).ok())
        .flat_map(|c| c.registry)
        .filter(|e| e.insecure)
        .filter_map(|e| e.location)
        .collect()
}

/// podman's auth files, most specific first (as `podman login` writes them).
fn auth_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    if let Some(f) = std::env::var_os("REGISTRY_AUTH_FILE") {
        files.push(f.into());
    }
    files.push("/run/containers/0/auth.json".into());
    if let Some(home) = std::env::var_os("HOME") {
        files.push(Path::new(&home).join(".config/containers/auth.json"));
        files.push(Path::new(&home).join(".docker/config.json"));
    }
    files
}

fn read_auths(path: &Path) -> Vec<(String, String)> {
    #[derive(Deserialize)]
    struct AuthFile {
        #[serde(default)]
        auths: HashMap<String, Auth>,
    }
    #[derive(Deserialize)]
    struct Auth {
        auth: Option<String>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<AuthFile>(&t).ok())
        .map(|f| {
            f.auths
                .into_iter()
                .filter_map(|(k, a)| a.auth.map(|a| (k, a)))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_bearer_challenge() {
        let p = challenge_params(
            r#"realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull""#,
        );
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "registry.example");
        assert_eq!(p["scope"], "repository:a/b:pull");
    }

    #[test]
    fn reads_insecure_registries_from_conf_and_dropins() -> Result<(), Box<dyn std::error::Error>> {
        let etc = tempfile::tempdir()?;
        std::fs::write(
            etc.path().join("registries.conf"),
            "unqualified-search-registries = [\"quay.io\"]\n[[registry]]\nlocation = \"quay.io\"\n",
        )?;
        std::fs::create_dir(etc.path().join("registries.conf.d"))?;
        std::fs::write(
            etc.path().join("registries.conf.d/local.conf"),
            "[[registry]]\nlocation = \"127.0.0.1:5000\"\ninsecure = true\n",
        )?;
        assert_eq!(insecure_registries(etc.path()), vec!["127.0.0.1:5000"]);
        Ok(())
    }
}
