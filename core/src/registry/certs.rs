//! A registry's own TLS files, as containers-certs.d(5) lays them out and podman's pull uses
//! them: in the directory `HOST[:PORT]` of the first of `~/.config/containers/certs.d`,
//! `/etc/containers/certs.d` and `/etc/docker/certs.d` that has one (containers/image reads
//! that one only), each `*.crt` is a CA certificate trusted beside the system's, and a
//! `NAME.cert` with its `NAME.key` is a client certificate. A lookup without them would refuse
//! a registry podman trusts, or be refused by one that asks for a client certificate.
//!
//! Stricter than podman in one way: a `.crt` that holds no certificate is an error here, where
//! podman skips it silently and then fails on the registry's certificate, far from the cause.

use std::path::{Path, PathBuf};
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, parse_pem};

#[derive(Debug, Clone, thiserror::Error)]
pub enum CertError {
    #[error(
        "could not read {path}: {source}; podman reads a registry's TLS files there: make it readable by root, or remove it"
    )]
    Unreadable {
        path: PathBuf,
        /// Shared: RegistryError, which carries this error, is Clone.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    #[error(
        "{path} is not a PEM certificate ({detail}); podman takes each *.crt there as a CA certificate: replace it with the CA's certificate in PEM (`openssl x509 -inform der -in CA.der -out {path}` converts a DER one), or remove it"
    )]
    BadCertificate { path: PathBuf, detail: String },
    #[error(
        "{path} is not an unencrypted PEM private key ({detail}); podman takes NAME.key as the key of the client certificate NAME.cert: write it with `openssl pkey -in KEY -out {path}`, or remove both files"
    )]
    BadKey { path: PathBuf, detail: String },
    #[error(
        "client certificate {cert} has no key {key} beside it; podman refuses this directory too: put the key there, or rename the file to .crt if it is a CA certificate"
    )]
    MissingKey { cert: PathBuf, key: PathBuf },
    #[error(
        "client key {key} has no certificate {cert} beside it; podman refuses this directory too: put the certificate there, or remove the key"
    )]
    MissingCert { key: PathBuf, cert: PathBuf },
    #[error(
        "client certificate {cert} and key {key} do not go together, or the key is of a kind TLS cannot use; replace them with a matching pair"
    )]
    UnusablePair { cert: PathBuf, key: PathBuf },
}

/// The certs.d directories to look in, in podman's order, and the system's CA bundles.
#[derive(Debug, Clone)]
pub struct CertsD {
    bases: Vec<PathBuf>,
    /// Where a missing CA certificate should go, for an error's hint.
    preferred: PathBuf,
    bundles: Vec<PathBuf>,
}

/// What one registry's directory holds. Debug shows no key material (ureq's types hide it).
#[derive(Debug, Clone, Default)]
pub struct HostTls {
    /// Extra CA certificates, from `*.crt`.
    pub cas: Vec<Certificate<'static>>,
    pub client: Option<ClientCert>,
    /// The files of `client`, for an error about them.
    pub client_files: Option<ClientFiles>,
}

/// Where a client certificate and its key were read from.
#[derive(Debug, Clone)]
pub struct ClientFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CertsD {
    /// `bases` in lookup order; `preferred` is one of them. `bundles` are the system's CA
    /// files, of which the first that can be read is used.
    pub fn new(bases: Vec<PathBuf>, preferred: PathBuf, bundles: Vec<PathBuf>) -> Self {
        CertsD {
            bases,
            preferred,
            bundles,
        }
    }

    /// The directory podman reads for `host` (`HOST[:PORT]`), or where it would look first.
    pub fn dir(&self, host: &str) -> PathBuf {
        self.bases
            .iter()
            .map(|b| b.join(host))
            .find(|d| d.exists())
            .unwrap_or_else(|| self.preferred.join(host))
    }

    /// The TLS files for `host`; none when no directory for it exists.
    pub fn for_host(&self, host: &str) -> Result<HostTls, CertError> {
        let dir = self.dir(host);
        let unreadable = |path: &Path, source: std::io::Error| CertError::Unreadable {
            path: path.to_path_buf(),
            source: source.into(),
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HostTls::default()),
            Err(e) => return Err(unreadable(&dir, e)),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        let mut tls = HostTls::default();
        for name in &names {
            let path = dir.join(name);
            if name.ends_with(".crt") {
                // A dangling link, or a file removed since the listing: podman skips it too.
                let Some(pem) = read_present(&path).map_err(|e| unreadable(&path, e))? else {
                    continue;
                };
                tls.cas.extend(certificates(&path, &pem)?);
            } else if let Some(base) = name.strip_suffix(".cert") {
                let key = dir.join(format!("{base}.key"));
                if !names.contains(&format!("{base}.key")) {
                    return Err(CertError::MissingKey { cert: path, key });
                }
                let cert_pem = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
                let key_pem = std::fs::read(&key).map_err(|e| unreadable(&key, e))?;
                let chain = certificates(&path, &cert_pem)?;
                let private = private_key(&key, &key_pem)?;
                // One pair is offered: podman's TLS stack sends the first, too, to a server
                // that asks.
                if tls.client.is_none() {
                    tls.client = Some(ClientCert::new_with_certs(&chain, private));
                    tls.client_files = Some(ClientFiles { cert: path, key });
                }
            } else if let Some(base) = name.strip_suffix(".key")
                && !names.contains(&format!("{base}.cert"))
            {
                return Err(CertError::MissingCert {
                    key: path,
                    cert: dir.join(format!("{base}.cert")),
                });
            }
        }
        Ok(tls)
    }

    /// The system's CA certificates, from the first bundle that can be read (as Go's
    /// crypto/x509, and so podman, finds them). Entries that do not parse are skipped: the
    /// system's store is not ours to judge.
    pub fn system_roots(&self) -> Vec<Certificate<'static>> {
        self.bundles
            .iter()
            .find_map(|b| std::fs::read(b).ok())
            .map(|pem| {
                parse_pem(&pem)
                    .filter_map(|item| match item {
                        Ok(PemItem::Certificate(c)) => Some(c),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The bundles Go's crypto/x509 tries on Linux, in its order; `SSL_CERT_FILE` first when set.
pub fn system_bundles(ssl_cert_file: Option<PathBuf>) -> Vec<PathBuf> {
    ssl_cert_file
        .into_iter()
        .chain(
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
                "/etc/ssl/ca-bundle.pem",
                "/etc/pki/tls/cacert.pem",
                "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
                "/etc/ssl/cert.pem",
            ]
            .map(PathBuf::from),
        )
        .collect()
}

/// The file's bytes, or None when it is gone (a dangling link).
fn read_present(path: &Path) -> Result<Option<Vec<u8>>, std::io::Error> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every certificate of a PEM file; at least one, each a DER structure. The TLS stack would
/// drop a malformed root without a word, so it is checked here.
fn certificates(path: &Path, pem: &[u8]) -> Result<Vec<Certificate<'static>>, CertError> {
    let bad = |detail: String| CertError::BadCertificate {
        path: path.to_path_buf(),
        detail,
    };
    let mut out = Vec::new();
    for item in parse_pem(pem) {
        match item {
            Ok(PemItem::Certificate(c)) if is_der_sequence(c.der()) => out.push(c),
            Ok(PemItem::Certificate(_)) => {
                return Err(bad("a CERTIFICATE block that is not DER".into()));
            }
            Ok(_) => {}
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    if out.is_empty() {
        return Err(bad("no BEGIN CERTIFICATE block".into()));
    }
    Ok(out)
}

fn private_key(path: &Path, pem: &[u8]) -> Result<PrivateKey<'static>, CertError> {
    let bad = |detail: String| CertError::BadKey {
        path: path.to_path_buf(),
        detail,
    };
    for item in parse_pem(pem) {
        match item {
            Ok(PemItem::PrivateKey(k)) if is_der_sequence(k.der()) => return Ok(k),
            Ok(PemItem::PrivateKey(_)) => return Err(bad("a key block that is not DER".into())),
            Ok(_) => {}
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    Err(bad(
        "no BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block".into(),
    ))
}

/// Whether `der` is one DER SEQUENCE whose length covers it exactly: the outer shape of every
/// certificate and key, and what text or a truncated file fails.
fn is_der_sequence(der: &[u8]) -> bool {
    let [0x30, first, rest @ ..] = der else {
        return false;
    };
    let (len, body) = if first & 0x80 == 0 {
        (usize::from(*first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return false;
        }
        let (len, body) = rest.split_at(n);
        (
            len.iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b)),
            body,
        )
    };
    body.len() == len
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = include_str!("testdata/ca.crt");
    const OTHER_CA: &str = include_str!("testdata/other-ca.crt");
    const CLIENT_CERT: &str = include_str!("testdata/client.cert");
    const CLIENT_KEY: &str = include_str!("testdata/client.key");

    /// certs.d trees under one tempdir: `containers/` and `docker/`, podman's order.
    fn certs_d(root: &Path) -> CertsD {
        let containers = root.join("containers/certs.d");
        CertsD::new(
            vec![containers.clone(), root.join("docker/certs.d")],
            containers,
            Vec::new(),
        )
    }

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn crt_files_are_cas_and_a_cert_with_its_key_is_the_client() {
        let root = tempfile::tempdir().expect("tempdir");
        let d = certs_d(root.path());
        assert!(d.for_host("r.example:5002").expect("none").cas.is_empty());
        put(root.path(), "containers/certs.d/r.example:5002/ca.crt", CA);
        put(
            root.path(),
            "containers/certs.d/r.example:5002/both.crt",
            &format!("{OTHER_CA}{CA}"),
        );
        put(
            root.path(),
            "containers/certs.d/r.example:5002/client.cert",
            CLIENT_CERT,
        );
        put(
            root.path(),
            "containers/certs.d/r.example:5002/client.key",
            CLIENT_KEY,
        );
        put(
            root.path(),
            "containers/certs.d/r.example:5002/README",
            "not read",
        );
        let tls = d.for_host("r.example:5002").expect("parses");
        assert_eq!(tls.cas.len(), 3, "every certificate of every .crt");
        assert!(tls.client.is_some());
        let files = tls.client_files.expect("files");
        assert!(files.cert.ends_with("client.cert") && files.key.ends_with("client.key"));
        assert!(
            d.for_host("r.example").expect("none").cas.is_empty(),
            "the port is part of the name"
        );
    }

    #[test]
    fn the_first_directory_that_exists_is_the_only_one_read() {
        let root = tempfile::tempdir().expect("tempdir");
        let d = certs_d(root.path());
        put(root.path(), "docker/certs.d/r.example/ca.crt", CA);
        assert_eq!(d.for_host("r.example").expect("docker's").cas.len(), 1);
        assert!(d.dir("r.example").starts_with(root.path().join("docker")));
        std::fs::create_dir_all(root.path().join("containers/certs.d/r.example")).expect("mkdir");
        assert!(
            d.for_host("r.example").expect("empty").cas.is_empty(),
            "containers/certs.d comes first, even empty, as in containers/image"
        );
        assert!(
            d.dir("other.example")
                .starts_with(root.path().join("containers"))
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_named_with_what_to_do() {
        for (name, text, kind) in [
            (
                "ca.crt",
                "hello, not a certificate\n",
                "no BEGIN CERTIFICATE",
            ),
            (
                "ca.crt",
                "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
                "not DER",
            ),
            (
                "ca.crt",
                "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
                "PEM",
            ),
        ] {
            let root = tempfile::tempdir().expect("tempdir");
            put(
                root.path(),
                &format!("containers/certs.d/r.example/{name}"),
                text,
            );
            let e = certs_d(root.path()).for_host("r.example").expect_err(kind);
            let msg = e.to_string();
            assert!(matches!(e, CertError::BadCertificate { .. }), "{msg}");
            assert!(
                msg.contains("r.example/ca.crt")
                    && msg.contains(kind)
                    && msg.contains("openssl x509"),
                "{msg}"
            );
        }
        let root = tempfile::tempdir().expect("tempdir");
        put(
            root.path(),
            "containers/certs.d/r.example/c.cert",
            CLIENT_CERT,
        );
        put(root.path(), "containers/certs.d/r.example/c.key", CA);
        let e = certs_d(root.path())
            .for_host("r.example")
            .expect_err("a cert as the key");
        assert!(matches!(e, CertError::BadKey { .. }), "{e}");
        assert!(e.to_string().contains("c.key"), "{e}");
    }

    #[test]
    fn a_client_certificate_needs_its_key_and_a_key_its_certificate() {
        let root = tempfile::tempdir().expect("tempdir");
        put(
            root.path(),
            "containers/certs.d/r.example/c.cert",
            CLIENT_CERT,
        );
        let e = certs_d(root.path())
            .for_host("r.example")
            .expect_err("no key");
        assert!(matches!(e, CertError::MissingKey { .. }), "{e}");
        assert!(e.to_string().contains("c.key"), "{e}");
        let root = tempfile::tempdir().expect("tempdir");
        put(
            root.path(),
            "containers/certs.d/r.example/c.key",
            CLIENT_KEY,
        );
        let e = certs_d(root.path())
            .for_host("r.example")
            .expect_err("no cert");
        assert!(matches!(e, CertError::MissingCert { .. }), "{e}");
    }

    #[test]
    fn system_roots_come_from_the_first_bundle_that_exists() {
        let root = tempfile::tempdir().expect("tempdir");
        put(
            root.path(),
            "b/bundle.pem",
            &format!("{CA}junk between\n{OTHER_CA}"),
        );
        let d = CertsD::new(
            Vec::new(),
            root.path().into(),
            vec![
                root.path().join("absent.pem"),
                root.path().join("b/bundle.pem"),
            ],
        );
        assert_eq!(d.system_roots().len(), 2);
        assert_eq!(
            system_bundles(Some("/x.pem".into()))[..2],
            [
                PathBuf::from("/x.pem"),
                PathBuf::from("/etc/ssl/certs/ca-certificates.crt")
            ]
        );
    }

    #[test]
    fn der_shapes() {
        assert!(is_der_sequence(&[0x30, 0x00]));
        assert!(is_der_sequence(&[0x30, 0x81, 0x01, 0x05]));
        assert!(!is_der_sequence(&[0x30, 0x02, 0x05]), "truncated");
        assert!(!is_der_sequence(b"hello"));
    }
}
