//! A bounded HTTP/1.1 request over the podman socket, decoded into refit's own tolerant types.
//!
//! bollard's Docker types are strict enums: podman's `stopped` state or a health status they
//! do not list fails the whole answer ("unknown variant stopped"), which once broke every
//! observation of a crash-looping unit, rollback included. The reads that observation rests
//! on (container list and inspect) come through here instead; bollard keeps the calls whose
//! answers it carries well (pull, tag, images, one-off containers).

use super::PodmanError;
use serde::de::DeserializeOwned;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The most an answer may hold: a container list of thousands is far below it.
const MAX_BODY: usize = 64 << 20;

/// GETs `path` (with its query) from the API at `socket` and decodes the JSON body; the whole
/// exchange is bounded by `timeout`. A 404 is `Ok(None)`.
pub fn get_json<T: DeserializeOwned>(
    socket: &str,
    call: &str,
    path: &str,
    timeout: Duration,
) -> Result<Option<T>, PodmanError> {
    let err = |detail: String| PodmanError::Api {
        call: call.to_string(),
        detail,
    };
    let Response { status, body } = send(socket, &Request::new(call, "GET", path, timeout))?;
    match status {
        200..=299 => serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| err(format!("podman's answer does not parse: {e}"))),
        404 => Ok(None),
        _ => Err(refused(call, status, &body)),
    }
}

/// One request to the API.
pub struct Request<'a> {
    /// What the request is called in errors: `image pull`.
    pub call: &'a str,
    pub method: &'a str,
    /// The path with its query.
    pub path: &'a str,
    /// podman secrets' create sends one.
    pub body: &'a [u8],
    /// A pull's `X-Registry-Auth`: a secret, so no error made here quotes the request.
    pub registry_auth: Option<&'a str>,
    /// The bound of the whole exchange.
    pub timeout: Duration,
}

impl<'a> Request<'a> {
    /// A request without body or extra header.
    pub fn new(call: &'a str, method: &'a str, path: &'a str, timeout: Duration) -> Self {
        Request {
            call,
            method,
            path,
            body: b"",
            registry_auth: None,
            timeout,
        }
    }
}

/// An answer: its status and its body, de-chunked.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A status podman answered that the call does not take, as the error naming the call and
/// quoting podman's answer.
pub fn refused(call: impl Into<String>, status: u16, body: &[u8]) -> PodmanError {
    PodmanError::Api {
        call: call.into(),
        detail: format!("HTTP {status}: {}", String::from_utf8_lossy(body).trim()),
    }
}

/// Sends `req` to the API at `socket`: the status and the de-chunked body, whatever the
/// status.
pub fn send(socket: &str, req: &Request) -> Result<Response, PodmanError> {
    send_tries(socket, req, req.method == "GET")
}

/// `send`, never asked again, even a GET: one that does something each time it is asked
/// (podman's health check run) must not be doubled.
pub fn send_once(socket: &str, req: &Request) -> Result<Response, PodmanError> {
    send_tries(socket, req, false)
}

fn send_tries(socket: &str, req: &Request, again: bool) -> Result<Response, PodmanError> {
    let err = |detail: String| PodmanError::Api {
        call: req.call.to_string(),
        detail,
    };
    let began = Instant::now();
    let mut raw = exchange(socket, req);
    // podman's API service, socket-activated, exits after a few idle seconds: a request that
    // meets it on its way out is reset, or refused until systemd listens again. A GET changes
    // nothing, so it is asked once more, after a moment, with what is left of its timeout: the
    // timeout bounds both asks. Anything else fails as it came.
    let left = req.timeout.saturating_sub(began.elapsed() + RETRY_AFTER);
    if raw.is_err() && again && !left.is_zero() {
        std::thread::sleep(RETRY_AFTER);
        raw = exchange(
            socket,
            &Request {
                timeout: left,
                ..*req
            },
        );
    }
    let raw = raw.map_err(|e| match e {
        Exchange::Connect(detail) => PodmanError::Unreachable {
            socket: socket.to_string(),
            detail,
        },
        Exchange::Io(detail) => err(detail),
    })?;
    parse_response(&raw).map_err(err)
}

/// How long a GET waits before it asks a service that went away once more.
const RETRY_AFTER: Duration = Duration::from_millis(300);

enum Exchange {
    Connect(String),
    Io(String),
}

fn exchange(socket: &str, req: &Request) -> Result<Vec<u8>, Exchange> {
    let Request {
        method,
        path,
        body,
        timeout,
        ..
    } = *req;
    let deadline = Instant::now() + timeout;
    let mut s = UnixStream::connect(socket).map_err(|e| Exchange::Connect(e.to_string()))?;
    let io = |e: std::io::Error| Exchange::Io(e.to_string());
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    let extra: String = req
        .registry_auth
        .map(|a| format!("X-Registry-Auth: {a}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(request.as_bytes()).map_err(io)?;
    s.write_all(body).map_err(io)?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Exchange::Io(format!(
                "no complete answer within {} s",
                timeout.as_secs()
            )));
        }
        s.set_read_timeout(Some(left)).map_err(io)?;
        match s.read(&mut buf) {
            Ok(0) => return Ok(raw),
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > MAX_BODY {
                    return Err(Exchange::Io(format!(
                        "the answer is larger than {MAX_BODY} bytes"
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
}

/// The status code and the body (de-chunked) of a whole HTTP/1.1 response.
fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let end = find(raw, b"\r\n\r\n").ok_or("the answer has no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let body = &raw[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP status line: {head:?}"))?;
    let chunked = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        })
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = find(rest, b"\r\n").ok_or("a chunk size line has no end")?;
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("bad chunk size {size_hex:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if rest.len() < size {
            return Err("the answer ended inside a chunk".into());
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).ok_or("a chunk has no end")?;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay as they are).
pub fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_response_gives_status_and_body() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[1,2]";
        assert_eq!(parse_response(raw), Ok(answer(b"[1,2]")));
    }

    fn answer(body: &[u8]) -> Response {
        Response {
            status: 200,
            body: body.to_vec(),
        }
    }

    #[test]
    fn a_chunked_response_is_joined() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2;x=y\r\n2]\r\n0\r\n\r\n";
        assert_eq!(parse_response(raw), Ok(answer(b"[1,2]")));
    }

    #[test]
    fn a_torn_response_is_an_error() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\n[1,";
        assert!(parse_response(raw).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            encode(r#"{"label":["A=b"]}"#),
            "%7B%22label%22%3A%5B%22A%3Db%22%5D%7D"
        );
    }

    #[test]
    fn an_absent_socket_is_unreachable() {
        let e = get_json::<serde_json::Value>(
            "/nonexistent/podman.sock",
            "container list",
            "/_ping",
            Duration::from_secs(1),
        )
        .expect_err("no socket there");
        assert!(matches!(e, PodmanError::Unreachable { .. }), "{e}");
    }

    /// A server that drops its first `drop_first` connections unanswered, then answers each
    /// with `{}`; returns the socket path and a count of the connections it took.
    fn flaky_server(
        dir: &std::path::Path,
        drop_first: usize,
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let path = dir.join("podman.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = taken.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n < drop_first {
                    continue;
                }
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        });
        (path.to_string_lossy().into_owned(), taken)
    }

    #[test]
    fn a_get_that_meets_the_service_on_its_way_out_is_asked_once_more() {
        let dir = tempfile::tempdir().expect("tmp");
        let (socket, taken) = flaky_server(dir.path(), 1);
        let got: Option<serde_json::Value> =
            super::get_json(&socket, "container list", "/x", Duration::from_secs(5))
                .expect("the second ask is answered");
        assert_eq!(got, Some(serde_json::json!({})));
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn a_get_is_not_asked_again_past_its_timeout() {
        let dir = tempfile::tempdir().expect("tmp");
        let (socket, taken) = flaky_server(dir.path(), 1);
        let req = Request::new("exec inspect", "GET", "/x", Duration::from_millis(200));
        let began = Instant::now();
        assert!(super::send(&socket, &req).is_err());
        assert!(
            began.elapsed() < Duration::from_millis(200),
            "{:?}",
            began.elapsed()
        );
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn anything_but_a_get_is_not_sent_twice() {
        let dir = tempfile::tempdir().expect("tmp");
        let (socket, taken) = flaky_server(dir.path(), 1);
        let req = Request {
            body: b"v",
            ..Request::new("secret create", "POST", "/x", Duration::from_secs(5))
        };
        let sent = super::send(&socket, &req);
        assert!(sent.is_err());
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
