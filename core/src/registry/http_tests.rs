//! The digest lookup against a registry served here: through a mirror, with and without a
//! login, as the testbed's login registry answers (basic auth over plain HTTP).

use super::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
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
        creds: creds(dir.path(), &addr, "refit:pw"),
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
        creds: Credentials::default(),
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
        creds: creds(dir.path(), &addr, "refit:wrong-secret"),
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
