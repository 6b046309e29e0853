//! `socket`: the systemd socket unit that holds a service's listening sockets while the
//! service restarts, so clients queue in the backlog instead of being refused.
//!
//! The socket's settings are carried inside the container unit, as `X-Refit-Socket=` entries
//! of its [Unit] section (systemd and quadlet ignore `X-` keys). So the container text alone
//! says which socket belongs to it: the socket is part of the revision, and a rollback or a
//! checkpoint that restores the container text restores the socket with it.

use super::file::{Entry, Section, UnitFile, check_value};
use serde_json::{Map, Value};

/// The [Unit] key that carries one `[Socket]` entry of the unit's socket.
pub const EMBED_KEY: &str = "X-Refit-Socket";

/// The end of the description of every socket refit writes: what tells its sockets from those
/// another tool wrote under the same name.
pub const WRITTEN_BY_REFIT: &str = "held by systemd across its restarts (refit)";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SocketError {
    #[error("socket.{0} is not a socket option; use listen, backlog, reuse_port and socket_mode")]
    Unknown(String),
    #[error(
        "socket.listen is empty; give at least one address, such as 127.0.0.1:8080 or /run/app.sock"
    )]
    NoListen,
    #[error(
        "socket.listen[{0}] {1:?} is neither HOST:PORT, [IPV6]:PORT, a port, nor an absolute unix socket path; write it as 127.0.0.1:8080 or /run/app.sock"
    )]
    Listen(usize, String),
    #[error("socket.backlog must be a whole number from 1 to 65535, not {0}")]
    Backlog(String),
    #[error("socket.reuse_port must be true or false, not {0}")]
    ReusePort(String),
    #[error("socket.socket_mode must be an octal mode such as 0660, not {0}")]
    Mode(String),
    #[error("socket: {0} is a template; socket activation is for a plain unit, such as `api`")]
    Template(String),
}

/// The `socket` option of a unit, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketSpec {
    pub listen: Vec<String>,
    pub backlog: Option<u32>,
    pub reuse_port: Option<bool>,
    pub socket_mode: Option<String>,
}

impl SocketSpec {
    pub fn parse(v: &Map<String, Value>) -> Result<Self, SocketError> {
        if let Some(k) = v
            .keys()
            .find(|k| !["listen", "backlog", "reuse_port", "socket_mode"].contains(&k.as_str()))
        {
            return Err(SocketError::Unknown(k.clone()));
        }
        let listen: Vec<String> = match v.get("listen") {
            Some(Value::Array(a)) => a.iter().map(scalar).collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(one) => vec![scalar(one)],
        };
        if listen.is_empty() {
            return Err(SocketError::NoListen);
        }
        for (i, l) in listen.iter().enumerate() {
            if !is_listen_address(l) {
                return Err(SocketError::Listen(i, l.clone()));
            }
        }
        let backlog = match v.get("backlog").filter(|b| !b.is_null()) {
            None => None,
            Some(b) => Some(
                scalar(b)
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=65535).contains(n))
                    .ok_or_else(|| SocketError::Backlog(scalar(b)))?,
            ),
        };
        let reuse_port = match v.get("reuse_port").filter(|b| !b.is_null()) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => match scalar(other).to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => Some(true),
                "false" | "no" | "0" => Some(false),
                _ => return Err(SocketError::ReusePort(scalar(other))),
            },
        };
        let socket_mode = match v.get("socket_mode").filter(|b| !b.is_null()) {
            None => None,
            Some(m) => {
                let m = scalar(m);
                let octal =
                    (3..=4).contains(&m.len()) && m.chars().all(|c| ('0'..='7').contains(&c));
                if !octal {
                    return Err(SocketError::Mode(m));
                }
                Some(m)
            }
        };
        Ok(SocketSpec {
            listen,
            backlog,
            reuse_port,
            socket_mode,
        })
    }

    /// The `[Socket]` entries, in a fixed order.
    fn entries(&self) -> Vec<Entry> {
        let mut out: Vec<Entry> = self
            .listen
            .iter()
            .map(|l| Entry::new("ListenStream", l.clone()))
            .collect();
        if let Some(b) = self.backlog {
            out.push(Entry::new("Backlog", b.to_string()));
        }
        if let Some(r) = self.reuse_port {
            out.push(Entry::new("ReusePort", if r { "yes" } else { "no" }));
        }
        if let Some(m) = &self.socket_mode {
            out.push(Entry::new("SocketMode", m.clone()));
        }
        out
    }

    /// Writes the socket into the container unit's [Unit] section.
    pub fn embed(&self, unit: &mut UnitFile) {
        let s = unit.section_mut("Unit");
        for e in self.entries() {
            s.entries
                .push(Entry::new(EMBED_KEY, format!("{}={}", e.key, e.value)));
        }
    }
}

/// Makes a unit that carries a socket pull it in: a start of the service starts `STEM.socket`
/// first, in the same transaction. refit never starts the socket on its own before the service:
/// a client connecting in between would start the service by activation, and that start would
/// pass for the one refit is about to ask for.
pub fn pull_in(unit: &mut UnitFile, stem: &str) {
    if unit.value("Unit", EMBED_KEY).is_none() {
        return;
    }
    let socket = format!("{stem}.socket");
    let s = unit.section_mut("Unit");
    for key in ["Wants", "After"] {
        if !s.entries.iter().any(|e| e.key == key && e.value == socket) {
            s.entries.push(Entry::new(key, socket.clone()));
        }
    }
}

/// A YAML scalar as the text it reads as (`8080` and `"8080"` alike).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// TCP `HOST:PORT`, `[IPV6]:PORT` or a bare port, or an absolute unix socket path.
fn is_listen_address(l: &str) -> bool {
    if check_value(l).is_err() || l.chars().any(char::is_whitespace) {
        return false;
    }
    if l.starts_with('/') {
        return !l.contains("/../") && !l.ends_with('/');
    }
    let port = match l.rsplit_once(':') {
        Some((host, port)) => {
            let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'))
            {
                v6.parse::<std::net::Ipv6Addr>().is_ok()
            } else {
                !host.is_empty()
                    && host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
            };
            if !host_ok {
                return false;
            }
            port
        }
        None => l,
    };
    port.parse::<u16>().is_ok_and(|p| p > 0)
}

/// The socket unit a container unit carries, if it carries one: its whole text, as written to
/// `NAME.socket`.
pub fn socket_unit(container: &UnitFile, service: &str) -> Option<UnitFile> {
    let entries: Vec<Entry> = container
        .values("Unit", EMBED_KEY)
        .filter_map(|v| v.split_once('='))
        .map(|(k, v)| Entry::new(k, v))
        .collect();
    if entries.is_empty() {
        return None;
    }
    let section = |name: &str, entries: Vec<Entry>| Section {
        name: name.into(),
        entries,
    };
    Some(UnitFile {
        sections: vec![
            section(
                "Unit",
                vec![Entry::new(
                    "Description",
                    format!("Listening sockets of {service}, {WRITTEN_BY_REFIT}"),
                )],
            ),
            section("Socket", entries),
            // Enabled for boot through sockets.target, as systemd's own sockets are.
            section("Install", vec![Entry::new("WantedBy", "sockets.target")]),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<SocketSpec, SocketError> {
        SocketSpec::parse(v.as_object().expect("a dict"))
    }

    #[test]
    fn a_socket_travels_inside_the_container_unit() {
        let spec = parse(json!({
            "listen": ["127.0.0.1:18301", "/run/api.sock"],
            "backlog": 512,
            "reuse_port": true,
            "socket_mode": "0660",
        }))
        .expect("valid");
        let mut unit = UnitFile::parse("[Container]\nImage=a:1\n").expect("parses");
        spec.embed(&mut unit);
        pull_in(&mut unit, "api");
        pull_in(&mut unit, "api");
        assert_eq!(
            unit.values("Unit", "Wants").collect::<Vec<_>>(),
            ["api.socket"]
        );
        assert_eq!(
            unit.values("Unit", "After").collect::<Vec<_>>(),
            ["api.socket"]
        );
        let back = UnitFile::parse(&unit.render()).expect("parses back");
        let socket = socket_unit(&back, "api.service").expect("a socket");
        insta::assert_snapshot!(socket.render());
        assert_eq!(socket_unit(&UnitFile::default(), "x.service"), None);
    }

    #[test]
    fn bad_socket_options_name_the_parameter() {
        assert_eq!(parse(json!({"listen": []})), Err(SocketError::NoListen));
        assert_eq!(
            parse(json!({"listen": ["127.0.0.1:99999"]})),
            Err(SocketError::Listen(0, "127.0.0.1:99999".into()))
        );
        assert_eq!(
            parse(json!({"listen": ["8080", "rel/path.sock"]})),
            Err(SocketError::Listen(1, "rel/path.sock".into()))
        );
        assert_eq!(
            parse(json!({"listen": ["x:1\nExecStart=/bin/evil"]})),
            Err(SocketError::Listen(0, "x:1\nExecStart=/bin/evil".into()))
        );
        assert_eq!(
            parse(json!({"listen": 8080, "backlog": 0})),
            Err(SocketError::Backlog("0".into()))
        );
        assert_eq!(
            parse(json!({"listen": 8080, "socket_mode": "rw"})),
            Err(SocketError::Mode("rw".into()))
        );
        assert_eq!(
            parse(json!({"listen": 8080, "accept": true})),
            Err(SocketError::Unknown("accept".into()))
        );
        assert!(parse(json!({"listen": "[::1]:8080", "reuse_port": "no"})).is_ok());
    }
}
