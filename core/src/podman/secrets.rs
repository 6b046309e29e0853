//! podman secrets through the libpod API: create, list, reveal and remove.
//!
//! bollard speaks only Docker's swarm secrets, and a one-off container needs a secret's value,
//! which only libpod's `showsecret` gives; so these calls are plain HTTP/1.1 over the socket.
//! A secret's value travels only in a request or response body: never in a path, a query or
//! an error message.

use super::PodmanError;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The label on every secret refit creates: the unit file it belongs to, so refit removes
/// only its own secrets, and only a unit's own.
pub const SECRET_UNIT_LABEL: &str = "io.refit.unit";

/// Seconds a secret call may take; they are small requests to a local daemon.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The most an answer may hold (a secret is at most 512 KiB).
const MAX_ANSWER: u64 = 16 << 20;

/// A secret as listed: its name and, for refit's own, the unit it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub name: String,
    pub unit: Option<String>,
}

/// Creates secret `name` holding `value`, labelled with `unit`. One that exists is left as
/// it is: refit names a secret after its content, so an existing name already holds it.
pub fn create(socket: &str, name: &str, unit: &str, value: &str) -> Result<(), PodmanError> {
    let labels = serde_json::json!({ SECRET_UNIT_LABEL: unit }).to_string();
    let path = format!(
        "/v4.0.0/libpod/secrets/create?name={}&labels={}",
        encode(name),
        encode(&labels)
    );
    let (status, body) = request(socket, "POST", &path, value.as_bytes())?;
    match status {
        200..=299 | 409 => Ok(()),
        _ => Err(failed("secret create", name, status, &body)),
    }
}

/// Every secret podman holds.
pub fn list(socket: &str) -> Result<Vec<SecretInfo>, PodmanError> {
    #[derive(serde::Deserialize)]
    struct Listed {
        #[serde(rename = "Spec")]
        spec: Spec,
    }
    #[derive(serde::Deserialize)]
    struct Spec {
        #[serde(rename = "Name")]
        name: String,
        #[serde(rename = "Labels", default)]
        labels: Option<std::collections::HashMap<String, String>>,
    }
    let (status, body) = request(socket, "GET", "/v4.0.0/libpod/secrets/json", b"")?;
    if !(200..=299).contains(&status) {
        return Err(failed("secret list", "", status, &body));
    }
    let listed: Vec<Listed> = serde_json::from_slice(&body).map_err(|e| PodmanError::Api {
        call: "secret list".into(),
        detail: format!("podman's answer does not parse: {e}"),
    })?;
    Ok(listed
        .into_iter()
        .map(|l| SecretInfo {
            unit: l.spec.labels.and_then(|mut m| m.remove(SECRET_UNIT_LABEL)),
            name: l.spec.name,
        })
        .collect())
}

/// The value secret `name` holds, or None when there is no such secret.
pub fn reveal(socket: &str, name: &str) -> Result<Option<String>, PodmanError> {
    #[derive(serde::Deserialize)]
    struct Shown {
        #[serde(rename = "SecretData", default)]
        data: String,
    }
    let path = format!(
        "/v4.0.0/libpod/secrets/{}/json?showsecret=true",
        encode(name)
    );
    let (status, body) = request(socket, "GET", &path, b"")?;
    match status {
        200..=299 => serde_json::from_slice::<Shown>(&body)
            .map(|s| Some(s.data))
            // serde's message could quote the body, which holds the value.
            .map_err(|_| PodmanError::Api {
                call: format!("secret inspect {name}"),
                detail: "podman's answer does not parse as a secret".into(),
            }),
        404 => Ok(None),
        _ => Err(failed("secret inspect", name, status, &body)),
    }
}

/// Removes secret `name`; one that is gone already is not an error.
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    let path = format!("/v4.0.0/libpod/secrets/{}", encode(name));
    let (status, body) = request(socket, "DELETE", &path, b"")?;
    match status {
        200..=299 | 404 => Ok(()),
        _ => Err(failed("secret remove", name, status, &body)),
    }
}

fn failed(call: &str, name: &str, status: u16, body: &[u8]) -> PodmanError {
    PodmanError::Api {
        call: format!("{call} {name}").trim_end().to_string(),
        detail: format!("HTTP {status}: {}", String::from_utf8_lossy(body).trim()),
    }
}

/// One request on a fresh connection, read to its end: (status, body).
fn request(
    socket: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>), PodmanError> {
    let unreachable = |e: std::io::Error| PodmanError::Unreachable {
        socket: socket.to_string(),
        detail: e.to_string(),
    };
    let io = |e: std::io::Error| PodmanError::Api {
        call: format!("{method} {}", path.split('?').next().unwrap_or(path)),
        detail: e.to_string(),
    };
    let mut s = UnixStream::connect(socket).map_err(unreachable)?;
    s.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    s.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(io)?;
    s.write_all(body).map_err(io)?;
    let mut raw = Vec::new();
    s.take(MAX_ANSWER).read_to_end(&mut raw).map_err(io)?;
    parse(&raw).ok_or_else(|| PodmanError::Api {
        call: format!("{method} {}", path.split('?').next().unwrap_or(path)),
        detail: "podman's answer is not HTTP".into(),
    })
}

/// Splits an HTTP/1.1 answer into its status and body, undoing chunked encoding.
fn parse(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = &raw[split + 4..];
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .replace(' ', "")
            .starts_with("transfer-encoding:chunked")
    });
    if !chunked {
        return Some((status, body.to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Some((status, out));
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// Percent-encodes a query or path value: everything but RFC 3986's unreserved characters.
fn encode(v: &str) -> String {
    v.bytes()
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
    fn answers_parse_plain_and_chunked() {
        assert_eq!(
            parse(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"),
            Some((404, b"{}".to_vec()))
        );
        assert_eq!(
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n"),
            Some((200, b"[1,2]".to_vec()))
        );
        assert_eq!(encode("a b/{\"k\"}"), "a%20b%2F%7B%22k%22%7D");
    }
}
