//! The registry's HTTP API (distribution v2): a HEAD of the tag's manifest, with the bearer
//! token dance public registries want, and the names, TLS files and credentials podman itself
//! would use.

use super::aliases::{ALIAS_CACHE, ShortNames};
use super::auth::{AuthError, Credentials};
use super::certs::{CertError, CertsD, HostTls};
use super::conf::{Endpoint, RegistriesConf};
use super::{Location, Registry, RegistryError, Roots, Untrusted};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use ureq::http::Response;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

/// Every manifest type podman pulls; without them a registry may answer with an old schema.
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json";

const TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpRegistry {
    /// Mirrors and `insecure` flags, from `registries.conf` and its drop-ins.
    conf: RegistriesConf,
    /// What a short name means here: aliases, search registries, `short-name-mode`.
    short_names: ShortNames,
    /// Each registry's CA and client certificates.
    certs: CertsD,
    /// The system's CA certificates, read once and only for a registry with CAs of its own:
    /// the platform verifier cannot take extra roots, so those get both sets explicitly.
    system_roots: OnceLock<Vec<Certificate<'static>>>,
    /// Logins by registry, from `auth_file` or podman's own auth files.
    creds: Credentials,
}

impl HttpRegistry {
    /// This host's registry settings and credentials, as podman reads them.
    pub fn from_host() -> Self {
        Self::at(&Roots::host(), Credentials::load(None).unwrap_or_default())
    }

    /// This host's registry settings, with the logins of `auth_file` when given (it must then
    /// exist and parse), else podman's own.
    pub fn for_auth_file(auth_file: Option<&Path>) -> Result<Self, AuthError> {
        Ok(Self::at(&Roots::host(), Credentials::load(auth_file)?))
    }

    /// The settings under `roots`, with `creds`.
    pub fn at(roots: &Roots, creds: Credentials) -> Self {
        let etc = &roots.etc_containers;
        let containers_certs = etc.join("certs.d");
        let bases = roots
            .home_containers
            .iter()
            .map(|h| h.join("certs.d"))
            .chain([containers_certs.clone(), roots.etc_docker.join("certs.d")])
            .collect();
        HttpRegistry {
            conf: RegistriesConf::read(etc),
            short_names: ShortNames::read(etc, &roots.var_cache_containers.join(ALIAS_CACHE)),
            certs: CertsD::new(bases, containers_certs, roots.ca_bundles.clone()),
            system_roots: OnceLock::new(),
            creds,
        }
    }

    /// What a pull sends podman so it uses the same logins: set only for an explicit
    /// `auth_file` (see `Credentials::pull_header`). A secret: never log it.
    pub fn pull_auth(&self) -> Option<String> {
        self.creds.pull_header()
    }

    /// An agent for one endpoint: its certs.d CAs trusted beside the system's, its client
    /// certificate offered, or (`verify` false, an insecure registry) no verification at all.
    fn agent(&self, verify: bool, files: &HostTls) -> ureq::Agent {
        let roots = if !verify {
            RootCerts::WebPki
        } else if files.cas.is_empty() {
            RootCerts::PlatformVerifier
        } else {
            let system = self.system_roots.get_or_init(|| self.certs.system_roots());
            RootCerts::new_with_certs(&[system.as_slice(), &files.cas].concat())
        };
        let tls = TlsConfig::builder()
            .root_certs(roots)
            .disable_verification(!verify)
            .client_cert(files.client.clone())
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
    fn authorize(&self, agent: &ureq::Agent, at: &Endpoint, challenge: &str) -> Option<String> {
        let basic = self.creds.for_name(&at.name()).map(|l| {
            let pair = format!("{}:{}", l.username, l.password);
            format!("Basic {}", STANDARD.encode(pair))
        });
        let Some(params) = challenge.strip_prefix("Bearer ") else {
            return basic;
        };
        let params = challenge_params(params);
        let realm = params.get("realm")?;
        // The login goes to the token service only where the registry itself is: a 401 of a
        // registry (or of whoever answers for it) must not send it elsewhere, or in the clear.
        let basic = basic.filter(|_| may_send_login(at, realm));
        let mut req = agent.get(realm.as_str()).query(
            "scope",
            params
                .get("scope")
                .cloned()
                .unwrap_or_else(|| format!("repository:{}:pull", at.repository)),
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

impl HttpRegistry {
    /// The digest of `tag` at one endpoint, with the TLS files of its registry.
    fn digest_at(&self, at: &Endpoint, tag: &str) -> Result<String, RegistryError> {
        let files = self.certs.for_host(&at.registry)?;
        let Some(client) = &files.client_files else {
            return self.ask(at, tag, &files);
        };
        // ureq builds its TLS setup at the first connection and panics on a client key rustls
        // cannot use or that does not match its certificate; that is the files' fault, not a
        // bug, so it is reported as theirs.
        catch_unwind(AssertUnwindSafe(|| self.ask(at, tag, &files))).unwrap_or_else(|_| {
            Err(CertError::UnusablePair {
                cert: client.cert.clone(),
                key: client.key.clone(),
            }
            .into())
        })
    }

    fn ask(&self, at: &Endpoint, tag: &str, files: &HostTls) -> Result<String, RegistryError> {
        let host = if at.registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            at.registry.as_str()
        };
        let path = format!("/v2/{}/manifests/{tag}", at.repository);
        let image = format!("{}:{tag}", at.name());
        let unreachable = |detail: String| RegistryError::Unreachable {
            registry: at.registry.clone(),
            image: image.clone(),
            detail,
        };
        // An insecure registry may speak plain HTTP, or TLS with a certificate nobody signed.
        let tries: &[(&str, bool)] = if at.insecure {
            &[("https", false), ("http", false)]
        } else {
            &[("https", true)]
        };
        let mut last = String::new();
        for (scheme, verify) in tries {
            let agent = self.agent(*verify, files);
            let url = format!("{scheme}://{host}{path}");
            let mut resp = match self.head(&agent, &url, None) {
                Ok(r) => r,
                Err(e) if *verify && untrusted(&e) => {
                    return Err(RegistryError::Untrusted(Box::new(Untrusted {
                        registry: at.registry.clone(),
                        image,
                        detail: e.to_string(),
                        cert_dir: self.certs.dir(&at.registry),
                    })));
                }
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let mut sent = false;
            if resp.status() == 401 {
                let challenge = header(&resp, "www-authenticate").unwrap_or_default();
                if let Some(auth) = self.authorize(&agent, at, &challenge) {
                    sent = true;
                    resp = self
                        .head(&agent, &url, Some(&auth))
                        .map_err(|e| unreachable(e.to_string()))?;
                }
            }
            if matches!(resp.status().as_u16(), 401 | 403) {
                return Err(RegistryError::Unauthorized {
                    registry: at.registry.clone(),
                    image,
                    status: resp.status().as_u16(),
                    had_login: sent,
                });
            }
            if !resp.status().is_success() {
                return Err(RegistryError::Refused {
                    registry: at.registry.clone(),
                    image,
                    status: resp.status().as_u16(),
                });
            }
            return header(&resp, "docker-content-digest")
                .ok_or_else(|| unreachable("its answer carries no Docker-Content-Digest".into()));
        }
        Err(unreachable(last))
    }
}

impl Registry for HttpRegistry {
    /// Asked as podman pulls: a short name becomes its alias, or each search registry's name
    /// in turn; each name is asked at each mirror of its registries.conf entry in order, then
    /// at its registry. The first answer wins.
    fn digest(&self, loc: &Location) -> Result<String, RegistryError> {
        if let Some(d) = &loc.digest {
            return Ok(d.clone());
        }
        let candidates = self.short_names.candidates(loc)?;
        let mut failed = Vec::new();
        for name in &candidates {
            match self.digest_of(name) {
                Ok(d) => return Ok(d),
                Err(e) => failed.push(e),
            }
        }
        if let [only] = failed.as_slice() {
            return Err(only.clone());
        }
        Err(RegistryError::NoCandidate {
            image: format!("{}:{}", loc.short.as_deref().unwrap_or_default(), loc.tag),
            tried: joined(&failed),
        })
    }
}

impl HttpRegistry {
    /// The digest of a fully qualified name: at its mirrors, then at its registry.
    fn digest_of(&self, loc: &Location) -> Result<String, RegistryError> {
        let endpoints = self
            .conf
            .endpoints(loc)
            .map_err(|b| RegistryError::Blocked(b.to_string()))?;
        let mut failed = Vec::new();
        for at in &endpoints {
            match self.digest_at(at, &loc.tag) {
                Ok(d) => return Ok(d),
                Err(e) => failed.push(e),
            }
        }
        if let [only] = failed.as_slice() {
            return Err(only.clone());
        }
        Err(RegistryError::NoMirror {
            image: format!("{}:{}", loc.name(), loc.tag),
            tried: joined(&failed),
        })
    }
}

fn joined(failed: &[RegistryError]) -> String {
    failed
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Whether a request failed on the server's certificate, which no retry mends: rustls's
/// `InvalidCertificate`, which the platform verifier's refusals become too. (Not a server's
/// alert about the client's certificate: that is no question of trust here.)
fn untrusted(e: &ureq::Error) -> bool {
    e.to_string().contains("invalid peer certificate")
}

fn header(resp: &Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Whether a bearer challenge's `realm` may get the registry's login: an https URL on the
/// registry's host or a name under it (docker.io's auth.docker.io), any port; for a registry
/// marked insecure, whatever it names, as for everything else it says.
fn may_send_login(at: &Endpoint, realm: &str) -> bool {
    if at.insecure {
        return true;
    }
    let Some(rest) = realm.strip_prefix("https://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = host_of(authority).to_ascii_lowercase();
    let own = host_of(&at.registry).to_ascii_lowercase();
    host == own
        || host
            .strip_suffix(own.as_str())
            .is_some_and(|sub| sub.ends_with('.'))
}

/// `HOST[:PORT]` or `[V6]:PORT` without the port.
fn host_of(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    }
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

#[cfg(test)]
#[path = "http_tests.rs"]
mod http_tests;

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
}
