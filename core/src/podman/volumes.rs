//! podman volumes through the libpod API: whether one exists, and the removal of one a data
//! step left behind.

use super::PodmanError;
use super::named::{self, Named};
use std::time::Duration;

const VOLUMES: Named = Named {
    collection: "volumes",
    noun: "volume",
    remove_verb: "remove",
    ask_timeout: Duration::from_secs(30),
    // podman deletes the volume's files, which a large old cluster has many of.
    remove_timeout: Duration::from_secs(300),
};

/// Removes volume `name`; one that is gone already is not an error, one a container still
/// uses is (podman's 409, said as such). Only one that exists under exactly this name is sent a
/// DELETE, which libpod would match by prefix (`named`).
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    named::remove(socket, &VOLUMES, name)
}

/// Whether podman has the volume `name`.
pub fn exists(socket: &str, name: &str) -> Result<bool, PodmanError> {
    named::exists(socket, &VOLUMES, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};

    /// A libpod stand-in that knows no volume by exact name (`exists` answers 404) and removes
    /// by prefix, as libpod does; returns the socket and the request lines it was sent.
    fn prefix_matching_podman(dir: &std::path::Path) -> (String, Arc<Mutex<Vec<String>>>) {
        let path = dir.join("podman.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut buf = [0u8; 4096];
                let n = conn.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                let line = head.lines().next().unwrap_or("").to_string();
                let status = if line.starts_with("DELETE") {
                    "204 No Content"
                } else {
                    "404 Not Found"
                };
                log.lock().expect("log").push(line);
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
            }
        });
        (path.to_string_lossy().into_owned(), seen)
    }

    #[test]
    fn a_volume_gone_is_never_sent_a_delete_that_podman_would_match_by_prefix() {
        let dir = tempfile::tempdir().expect("tmp");
        let (socket, seen) = prefix_matching_podman(dir.path());
        remove(&socket, "pgdata").expect("a gone volume is not an error");
        let lines = seen.lock().expect("log").clone();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("GET /v4.0.0/libpod/volumes/pgdata/exists"),
            "{lines:?}"
        );
    }
}
