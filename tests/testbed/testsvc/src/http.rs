//! Just enough HTTP/1.0: GET /version answers VERSION, anything else 404. One thread per
//! listener accepts, one per connection answers, so a slow client holds up no other. A
//! SIGTERM stops the accepting and lets the answers in flight finish (a graceful shutdown);
//! what waits in a socket-activated listener's backlog stays there for the next revision.

use crate::listen::Listener;
use crate::signals;
use std::io::{ErrorKind, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD: usize = 8192;
/// How often an idle accept loop looks for a stop.
const STOP_POLL: Duration = Duration::from_millis(20);
/// The longest a stop waits for answers in flight: a client slower than its read timeout is
/// not worth more.
const DRAIN_LIMIT: Duration = READ_TIMEOUT;

pub fn serve(listeners: Vec<Listener>, version: &str) -> ExitCode {
    signals::drain_on_term();
    let body: Arc<str> = Arc::from(format!("{version}\n"));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|listener| {
            let body = Arc::clone(&body);
            let in_flight = Arc::clone(&in_flight);
            std::thread::spawn(move || accept_loop(&listener, &body, &in_flight))
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    if !signals::terminating() {
        eprintln!("every listener failed");
        return ExitCode::FAILURE;
    }
    let deadline = Instant::now() + DRAIN_LIMIT;
    while in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "stopped: {} answer(s) cut short",
        in_flight.load(Ordering::SeqCst)
    );
    ExitCode::SUCCESS
}

fn accept_loop(listener: &Listener, body: &Arc<str>, in_flight: &Arc<AtomicUsize>) {
    if let Err(e) = listener.set_nonblocking() {
        eprintln!("listener: {e}");
        return;
    }
    while !signals::terminating() {
        if !listener.readable(STOP_POLL) {
            continue;
        }
        let conn = match accept(listener) {
            Ok(conn) => conn,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => {
                eprintln!("accept: {e}");
                continue;
            }
        };
        let body = Arc::clone(body);
        let in_flight = Arc::clone(in_flight);
        in_flight.fetch_add(1, Ordering::SeqCst);
        std::thread::spawn(move || {
            answer(conn, &body);
            in_flight.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// One connection, blocking again (an accepted socket must not inherit the listener's mode).
fn accept(listener: &Listener) -> std::io::Result<Box<dyn Conn>> {
    Ok(match listener {
        Listener::Tcp(l) => {
            let (s, _) = l.accept()?;
            s.set_nonblocking(false)?;
            Box::new(s)
        }
        Listener::Unix(l) => {
            let (s, _) = l.accept()?;
            s.set_nonblocking(false)?;
            Box::new(s)
        }
    })
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
