//! The digest lookup against a registry served here: through a mirror, with and without a
//! login, as the testbed's login registry answers (basic auth over plain HTTP); by a short
//! name; and over TLS with a certs.d CA (`openssl s_server`, skipped where there is none).

use super::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// The requests a served registry saw: each path, and whether it carried the login.
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

/// Serves `/v2/svc/manifests/1.0` to requests carrying `Authorization: Basic {want}`, a 401
/// with a basic challenge to others; notes each request's path and whether it had a login.
fn login_registry(want: &'static str) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let noted = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten().take(20) {
            let mut reader = BufReader::new(&stream);
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let mut authorized = false;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    authorized = line.trim_end().ends_with(&format!("Basic {want}"));
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
            noted
                .lock()
                .expect("noted")
                .push((path.clone(), authorized));
            let answer = if !authorized {
                "HTTP/1.1 401 Unauthorized\r\nWww-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
            } else if path == "/v2/svc/manifests/1.0" {
                format!(
                    "HTTP/1.1 200 OK\r\nDocker-Content-Digest: {DIGEST}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    (addr, seen)
}

fn loc(r: &str) -> Location {
    Location::of(&crate::podman::ImageRef::parse(r).expect("reference"))
}

fn mirrored(addr: &str) -> RegistriesConf {
    RegistriesConf::parse([format!(
        "[[registry]]\nlocation = \"{addr}\"\ninsecure = true\n\
         [[registry]]\nprefix = \"mirror.invalid\"\nlocation = \"mirror.invalid\"\n\
         [[registry.mirror]]\nlocation = \"{addr}\"\ninsecure = true\n"
    )
    .as_str()])
}

/// The host's settings under `dir` (`etc/containers`, ...), none there until a test writes them.
fn roots_in(dir: &Path) -> Roots {
    Roots {
        etc_containers: dir.join("etc/containers"),
        var_cache_containers: dir.join("var/cache/containers"),
        etc_docker: dir.join("etc/docker"),
        home_containers: None,
        ca_bundles: Vec::new(),
    }
}

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn creds(dir: &Path, addr: &str, pair: &str) -> Credentials {
    let p = dir.join("auth.json");
    let auth = STANDARD.encode(pair);
    std::fs::write(
        &p,
        serde_json::json!({"auths": {addr: {"auth": auth}}}).to_string(),
    )
    .expect("write");
    Credentials::load(Some(&p)).expect("loads")
}

#[test]
fn a_login_from_the_auth_file_answers_at_the_registry_and_through_its_mirror() {
    let want = STANDARD.encode("refit:pw");
    let (addr, seen) = login_registry(Box::leak(want.into_boxed_str()));
    let dir = tempfile::tempdir().expect("tempdir");
    let reg = HttpRegistry {
        conf: mirrored(&addr),
        ..HttpRegistry::at(&roots_in(dir.path()), creds(dir.path(), &addr, "refit:pw"))
    };
    assert_eq!(
        reg.digest(&loc(&format!("{addr}/svc:1.0"))).ok().as_deref(),
        Some(DIGEST)
    );
    assert_eq!(
        reg.digest(&loc("mirror.invalid/svc:1.0")).ok().as_deref(),
        Some(DIGEST),
        "the mirror answers for a name that resolves nowhere"
    );
    let asked = seen.lock().expect("seen").clone();
    let manifest = |authorized: bool| {
        asked
            .iter()
            .filter(|(p, a)| p == "/v2/svc/manifests/1.0" && *a == authorized)
            .count()
    };
    assert_eq!(
        (manifest(false), manifest(true)),
        (2, 2),
        "each lookup asked once without a login, then once with it: {asked:?}"
    );
}

#[test]
fn without_the_login_the_error_names_the_registry_and_shows_no_secret() {
    let (addr, _) = login_registry("bm90OnRoaXM=");
    let dir = tempfile::tempdir().expect("tempdir");
    let none = HttpRegistry {
        conf: mirrored(&addr),
        ..HttpRegistry::at(&roots_in(dir.path()), Credentials::default())
    };
    let e = none
        .digest(&loc(&format!("{addr}/svc:1.0")))
        .expect_err("no login");
    assert!(
        matches!(
            e,
            RegistryError::Unauthorized {
                had_login: false,
                status: 401,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains(&addr), "{e}");
    let wrong = HttpRegistry {
        conf: mirrored(&addr),
        ..HttpRegistry::at(
            &roots_in(dir.path()),
            creds(dir.path(), &addr, "refit:wrong-secret"),
        )
    };
    let e = wrong
        .digest(&loc("mirror.invalid/svc:1.0"))
        .expect_err("wrong login, and the registry itself does not resolve");
    let msg = e.to_string();
    assert!(matches!(e, RegistryError::NoMirror { .. }), "{msg}");
    assert!(
        msg.contains(&addr) && msg.contains("with the login refit sent"),
        "{msg}"
    );
    assert!(msg.contains("mirror.invalid"), "{msg}");
    assert!(!msg.contains("wrong-secret"), "{msg}");
}

/// A port nothing listens on: bound, then let go.
fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}

#[test]
fn a_short_name_is_asked_where_its_alias_or_the_search_registries_say() {
    let want = STANDARD.encode("refit:pw");
    let (addr, seen) = login_registry(Box::leak(want.into_boxed_str()));
    let gone = closed_port();
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = roots_in(dir.path());
    write(
        roots.etc_containers.join("registries.conf"),
        &format!(
            "unqualified-search-registries = [\"{gone}\", \"{addr}\"]\n\
             [[registry]]\nlocation = \"{addr}\"\ninsecure = true\n\
             [[registry]]\nlocation = \"{gone}\"\ninsecure = true\n"
        ),
    );
    write(
        roots
            .etc_containers
            .join("registries.conf.d/60-test-alias.conf"),
        &format!("[aliases]\n\"t-alias\" = \"{addr}/svc\"\n"),
    );
    let reg = HttpRegistry::at(&roots, creds(dir.path(), &addr, "refit:pw"));
    assert_eq!(
        reg.digest(&loc("t-alias:1.0")).ok().as_deref(),
        Some(DIGEST),
        "the alias names the registry and the repository"
    );
    assert_eq!(
        reg.digest(&loc("svc:1.0")).ok().as_deref(),
        Some(DIGEST),
        "no alias: each search registry in turn, the one that is gone first"
    );
    assert!(
        seen.lock()
            .expect("seen")
            .iter()
            .all(|(p, _)| p == "/v2/svc/manifests/1.0"),
        "never docker.io's library/ path"
    );
    let e = reg.digest(&loc("absent:1.0")).expect_err("nowhere");
    assert!(matches!(e, RegistryError::NoCandidate { .. }), "{e}");
    assert!(
        e.to_string().contains(&gone) && e.to_string().contains(&addr),
        "{e}"
    );
    write(
        roots
            .etc_containers
            .join("registries.conf.d/70-enforcing.conf"),
        "short-name-mode = \"enforcing\"\n",
    );
    let e = HttpRegistry::at(&roots, Credentials::default())
        .digest(&loc("svc:1.0"))
        .expect_err("ambiguous");
    assert!(matches!(e, RegistryError::ShortName(_)), "{e}");
}

const CA: &str = include_str!("testdata/ca.crt");
const OTHER_CA: &str = include_str!("testdata/other-ca.crt");

/// `openssl s_server` for 127.0.0.1 with testdata's server certificate (signed by
/// testdata/ca.crt), answering its one connection with a manifest's digest. Killed on drop.
struct TlsRegistry {
    addr: String,
    child: Child,
}

impl Drop for TlsRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/registry/testdata")
        .join(name)
}

/// None, with a note, where openssl is not installed. `extra` goes to s_server.
fn tls_registry(extra: &[&str]) -> Option<TlsRegistry> {
    let spawned = Command::new("openssl")
        .args([
            "s_server",
            "-accept",
            "127.0.0.1:0",
            "-naccept",
            "1",
            "-cert",
        ])
        .arg(testdata("server.crt"))
        .arg("-key")
        .arg(testdata("server.key"))
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: no openssl to serve TLS");
            return None;
        }
        Err(e) => panic!("openssl s_server: {e}"),
    };
    // s_server sends what comes on its stdin once a client is connected.
    let answer = format!(
        "HTTP/1.1 200 OK\r\nDocker-Content-Digest: {DIGEST}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(answer.as_bytes()).expect("answer");
    drop(stdin);
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() && out.read_line(&mut line).unwrap_or(0) > 0 {
        addr = line.trim().strip_prefix("ACCEPT ").map(str::to_string);
        line.clear();
    }
    // What the client sends is printed; read it so s_server never waits on the pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let addr = addr.expect("s_server printed ACCEPT HOST:PORT");
    Some(TlsRegistry { addr, child })
}

#[test]
fn a_tls_registry_is_trusted_through_its_certs_d_ca_and_refused_without() {
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = roots_in(dir.path());
    let Some(trusted) = tls_registry(&[]) else {
        return;
    };
    write(
        roots
            .etc_containers
            .join(format!("certs.d/{}/ca.crt", trusted.addr)),
        CA,
    );
    let reg = HttpRegistry::at(&roots, Credentials::default());
    assert_eq!(
        reg.digest(&loc(&format!("{}/svc:1.0", trusted.addr)))
            .map_err(|e| e.to_string()),
        Ok(DIGEST.to_string()),
        "the certs.d CA signed the server's certificate"
    );
    let Some(other) = tls_registry(&[]) else {
        return;
    };
    write(
        roots
            .etc_docker
            .join(format!("certs.d/{}/ca.crt", other.addr)),
        OTHER_CA,
    );
    let e = reg
        .digest(&loc(&format!("{}/svc:1.0", other.addr)))
        .expect_err("a CA that did not sign it");
    let msg = e.to_string();
    assert!(matches!(e, RegistryError::Untrusted(_)), "{msg}");
    assert!(
        msg.contains(&other.addr)
            && msg.contains(&format!("etc/docker/certs.d/{}/ca.crt", other.addr)),
        "names the registry and the file podman reads: {msg}"
    );
    let Some(unknown) = tls_registry(&[]) else {
        return;
    };
    let e = reg
        .digest(&loc(&format!("{}/svc:1.0", unknown.addr)))
        .expect_err("no certs.d: the system's roots alone");
    let msg = e.to_string();
    assert!(matches!(e, RegistryError::Untrusted(_)), "{msg}");
    assert!(
        msg.contains(&format!("etc/containers/certs.d/{}/ca.crt", unknown.addr)),
        "{msg}"
    );
}

#[test]
fn a_broken_certs_d_file_fails_the_lookup_with_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = roots_in(dir.path());
    let addr = closed_port();
    write(
        roots.etc_containers.join(format!("certs.d/{addr}/ca.crt")),
        "not a certificate",
    );
    let e = HttpRegistry::at(&roots, Credentials::default())
        .digest(&loc(&format!("{addr}/svc:1.0")))
        .expect_err("bad ca.crt");
    assert!(matches!(e, RegistryError::Certs(_)), "{e}");
    assert!(e.to_string().contains(&format!("{addr}/ca.crt")), "{e}");
}

#[test]
fn the_certs_d_client_certificate_is_offered_to_a_registry_that_asks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = roots_in(dir.path());
    let ca = testdata("ca.crt");
    let asks = ["-Verify", "1", "-CAfile", ca.to_str().expect("utf-8 path")];
    let Some(with) = tls_registry(&asks) else {
        return;
    };
    let certs_d = roots.etc_containers.join(format!("certs.d/{}", with.addr));
    write(certs_d.join("ca.crt"), CA);
    write(
        certs_d.join("client.cert"),
        include_str!("testdata/client.cert"),
    );
    write(
        certs_d.join("client.key"),
        include_str!("testdata/client.key"),
    );
    let reg = HttpRegistry::at(&roots, Credentials::default());
    assert_eq!(
        reg.digest(&loc(&format!("{}/svc:1.0", with.addr)))
            .map_err(|e| e.to_string()),
        Ok(DIGEST.to_string())
    );
    let Some(without) = tls_registry(&asks) else {
        return;
    };
    write(
        roots
            .etc_containers
            .join(format!("certs.d/{}/ca.crt", without.addr)),
        CA,
    );
    let e = reg
        .digest(&loc(&format!("{}/svc:1.0", without.addr)))
        .expect_err("no client certificate");
    assert!(matches!(e, RegistryError::Unreachable { .. }), "{e}");
}

#[test]
fn a_client_key_that_is_not_the_certificates_is_named_not_a_panic() {
    // Connections wait in the backlog: enough for the TLS setup to start.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let roots = roots_in(dir.path());
    let certs_d = roots.etc_containers.join(format!("certs.d/{addr}"));
    write(
        certs_d.join("client.cert"),
        include_str!("testdata/client.cert"),
    );
    write(
        certs_d.join("client.key"),
        include_str!("testdata/server.key"),
    );
    let e = HttpRegistry::at(&roots, Credentials::default())
        .digest(&loc(&format!("{addr}/svc:1.0")))
        .expect_err("mismatched pair");
    assert!(
        matches!(e, RegistryError::Certs(CertError::UnusablePair { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("client.key"), "{e}");
}

#[test]
fn a_login_goes_only_to_an_https_realm_of_the_registry_s_own_host() {
    let at = |registry: &str, insecure: bool| Endpoint {
        registry: registry.into(),
        repository: "a/b".into(),
        insecure,
        mirror: false,
    };
    let docker = at("docker.io", false);
    assert!(may_send_login(&docker, "https://auth.docker.io/token"));
    assert!(may_send_login(
        &at("quay.io", false),
        "https://quay.io/v2/auth"
    ));
    assert!(may_send_login(
        &at("reg.example:5000", false),
        "https://reg.example:5001/token"
    ));
    for elsewhere in [
        "http://auth.docker.io/token",
        "https://evil.example/token",
        "https://evildocker.io/token",
        "https://docker.io.evil.example/token",
        "https://docker.io@evil.example/token",
        "ftp://docker.io/token",
    ] {
        assert!(!may_send_login(&docker, elsewhere), "{elsewhere}");
    }
    assert!(may_send_login(
        &at("reg.local:5000", true),
        "http://127.0.0.1:5001/token"
    ));
}
