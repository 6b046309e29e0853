//! Just enough HTTP/1.0: GET /version answers VERSION, anything else 404. One thread per
//! listener accepts, one per connection answers, so a slow client holds up no other.

use crate::listen::Listener;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD: usize = 8192;

pub fn serve(listeners: Vec<Listener>, version: &str) -> ExitCode {
    let body: Arc<str> = Arc::from(format!("{version}\n"));
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|listener| {
            let body = Arc::clone(&body);
            std::thread::spawn(move || accept_loop(listener, &body))
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    eprintln!("every listener failed");
    ExitCode::FAILURE
}

fn accept_loop(listener: Listener, body: &Arc<str>) {
    loop {
        let conn: Box<dyn Conn> = match &listener {
            Listener::Tcp(l) => match l.accept() {
                Ok((s, _)) => Box::new(s),
                Err(e) => {
                    eprintln!("accept: {e}");
                    continue;
                }
            },
            Listener::Unix(l) => match l.accept() {
                Ok((s, _)) => Box::new(s),
                Err(e) => {
                    eprintln!("accept: {e}");
                    continue;
                }
            },
        };
        let body = Arc::clone(body);
        std::thread::spawn(move || answer(conn, &body));
    }
}

trait Conn: Read + Write + Send {
    fn set_timeout(&self, t: Duration) -> std::io::Result<()>;
}

impl Conn for std::net::TcpStream {
    fn set_timeout(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

impl Conn for std::os::unix::net::UnixStream {
    fn set_timeout(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

fn answer(mut conn: Box<dyn Conn>, body: &str) {
    if conn.set_timeout(READ_TIMEOUT).is_err() {
        return;
    }
    let Some(head) = read_head(&mut conn) else {
        return;
    };
    let (status, body) = if asks_for_version(&head) {
        ("200 OK", body)
    } else {
        ("404 Not Found", "not found\n")
    };
    let response = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes());
}

/// Whether the request line is `GET /version ...`.
fn asks_for_version(head: &[u8]) -> bool {
    head.split(|&b| b == b'\r' || b == b'\n')
        .next()
        .and_then(|line| std::str::from_utf8(line).ok())
        .is_some_and(|line| {
            let mut words = line.split(' ');
            words.next() == Some("GET") && words.next() == Some("/version")
        })
}

/// The request up to its blank line; None when the client goes away or sends too much.
fn read_head(conn: &mut Box<dyn Conn>) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = conn.read(&mut buf).ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::asks_for_version;

    #[test]
    fn only_get_version_is_answered() {
        assert!(asks_for_version(
            b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
        ));
        assert!(!asks_for_version(b"GET /versions HTTP/1.1\r\n\r\n"));
        assert!(!asks_for_version(b"POST /version HTTP/1.1\r\n\r\n"));
        assert!(!asks_for_version(b"\xff\r\n\r\n"));
    }
}
