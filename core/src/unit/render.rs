//! From a module's structured options (or raw `content`) to the unit refit will write.

use super::file::{Entry, ParseError, UnitFile, Unrepresentable, check_value};
use crate::reference::{ImageRef, RefError};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RenderError {
    #[error("{param} {why}")]
    Value { param: String, why: Unrepresentable },
    #[error(
        "{0} is not an environment variable name; use letters, digits and _, not starting with a digit"
    )]
    EnvName(String),
    #[error("{0} is empty; podman cannot hold an empty secret: give a value, or leave the key out")]
    EmptySecret(String),
    #[error(
        "{what} entry {entry:?} is not `Key=Value`; write it as, for example, `After=db.service`"
    )]
    NotAPair { what: &'static str, entry: String },
    #[error(
        "the unit has no image: set `image`, or an `Image=` line in the [Container] section of `content`"
    )]
    NoImage,
    #[error(
        "a {kind} unit takes its text as `content`; `{param}` is an option of .container units only"
    )]
    ContentOnly {
        kind: super::kind::Kind,
        param: &'static str,
    },
    #[error(
        "{0}: ServiceName= renames the service quadlet generates, and refit finds a unit's service by its file name; leave ServiceName= out"
    )]
    ServiceName(String),
    #[error("the unit content does not parse: {0}")]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Image(#[from] RefError),
    #[error(transparent)]
    Socket(#[from] super::socket::SocketError),
}

/// The options that describe one `.container` unit. Everything optional, so `content` can stand
/// alone; the module spec says which combinations are allowed.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ContainerOptions {
    pub image: Option<String>,
    pub exec: Option<String>,
    pub volumes: Vec<String>,
    pub env: Map<String, Value>,
    pub secret_env: Map<String, Value>,
    pub secrets: Vec<String>,
    pub network: Option<String>,
    pub ports: Vec<String>,
    pub health_cmd: Option<String>,
    pub health_interval: Option<String>,
    pub labels: Map<String, Value>,
    pub depends_on: Vec<String>,
    pub unit: Vec<String>,
    pub container: Vec<String>,
    pub service: Vec<String>,
    pub install: Vec<String>,
    pub content: Option<String>,
    /// The socket unit that holds the service's listening sockets (see `unit::socket`).
    pub socket: Option<Map<String, Value>>,
}

/// Where a container's image comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// A reference to pull: `Image=registry/app:1`.
    Ref(ImageRef),
    /// Another quadlet unit, by file name: `Image=app.image` or `Image=app.build`; the
    /// reference is the one that unit names (`unit::graph` resolves it).
    Unit(String),
}

/// A desired unit: its parsed text and, for a container, the image it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedUnit {
    pub unit: UnitFile,
    pub image: Option<ImageSource>,
}

/// Renders a unit of `kind`. A `.container` takes structured options or `content`; the other
/// kinds take `content` alone, kept as it is written.
pub fn render_kind(
    kind: super::kind::Kind,
    opts: &ContainerOptions,
    secret_name: SecretNamer<'_>,
) -> Result<RenderedUnit, RenderError> {
    if kind.runs_container() {
        return render(opts, secret_name);
    }
    let structured = [
        ("image", opts.image.is_some()),
        ("exec", opts.exec.is_some()),
        ("volumes", !opts.volumes.is_empty()),
        ("env", !opts.env.is_empty()),
        ("secret_env", !opts.secret_env.is_empty()),
        ("secrets", !opts.secrets.is_empty()),
        ("network", opts.network.is_some()),
        ("ports", !opts.ports.is_empty()),
        ("health_cmd", opts.health_cmd.is_some()),
        ("health_interval", opts.health_interval.is_some()),
        ("labels", !opts.labels.is_empty()),
        ("depends_on", !opts.depends_on.is_empty()),
        ("unit", !opts.unit.is_empty()),
        ("container", !opts.container.is_empty()),
        ("service", !opts.service.is_empty()),
        ("install", !opts.install.is_empty()),
        ("socket", opts.socket.is_some()),
    ];
    if let Some((param, _)) = structured.iter().find(|(_, given)| *given) {
        return Err(RenderError::ContentOnly { kind, param });
    }
    let text = opts.content.as_deref().ok_or(RenderError::ContentOnly {
        kind,
        param: "content",
    })?;
    let unit = writable(UnitFile::parse(text)?)?;
    if unit.value(kind.section(), "ServiceName").is_some() {
        return Err(RenderError::ServiceName(format!("[{}]", kind.section())));
    }
    Ok(RenderedUnit { unit, image: None })
}

/// The podman secret a `secret_env` entry is held in, named from its key and value.
pub type SecretNamer<'a> = &'a dyn Fn(&str, &str) -> String;

/// Renders the unit. A `secret_env` value is never written: its entry becomes
/// `Secret=NAME,type=env,target=KEY`, with NAME from `secret_name`.
pub fn render(
    opts: &ContainerOptions,
    secret_name: SecretNamer<'_>,
) -> Result<RenderedUnit, RenderError> {
    let mut unit = match &opts.content {
        Some(text) => writable(UnitFile::parse(text)?)?,
        None => structured(opts, secret_name)?,
    };
    // `Wants=`, not `Requires=`: systemd propagates a restart along Requires=, BindsTo=,
    // PartOf= and StopPropagatedFrom= (checked on systemd 257: the dependent restarts, or, for
    // StopPropagatedFrom=, stays stopped), so an update of `app` would take every unchanged
    // worker down with it. Wants= pulls the dependency in and After= orders it; a stack stops
    // as one through its target (`PartOf=TARGET`) or refit's ordered stops.
    for (i, d) in opts.depends_on.iter().enumerate() {
        one_line(&format!("depends_on[{i}]"), d)?;
        let svc = super::name::service_name(d);
        let s = unit.section_mut("Unit");
        s.entries.push(Entry::new("Wants", svc.clone()));
        s.entries.push(Entry::new("After", svc));
    }
    if let Some(socket) = &opts.socket {
        super::socket::SocketSpec::parse(socket)?.embed(&mut unit);
    }
    // [Unit] leads a unit file, as systemd's own files have it; only a unit refit added to is
    // reordered, so a given `content` keeps its revision.
    if (!opts.depends_on.is_empty() || opts.socket.is_some())
        && let Some(i) = unit.sections.iter().position(|s| s.name == "Unit")
    {
        let u = unit.sections.remove(i);
        unit.sections.insert(0, u);
    }
    let image = unit
        .value("Container", "Image")
        .ok_or(RenderError::NoImage)?;
    // quadlet reads `app.image` and `app.build` as units whose image it runs; refit would
    // otherwise pull `docker.io/library/app.image`.
    let image = if image.ends_with(".image") || image.ends_with(".build") {
        ImageSource::Unit(image.to_string())
    } else {
        ImageSource::Ref(ImageRef::parse(image)?)
    };
    if unit.value("Container", "ServiceName").is_some() {
        return Err(RenderError::ServiceName("[Container]".into()));
    }
    Ok(RenderedUnit {
        unit,
        image: Some(image),
    })
}

/// The parsed `content`, if refit can write each of its values back as it read it: a value
/// that ends in a backslash or in white space (only the file's last line can hold one) would
/// join the next line, or lose its end, once written.
fn writable(unit: UnitFile) -> Result<UnitFile, RenderError> {
    for s in &unit.sections {
        for Entry { key: k, value: v } in &s.entries {
            let why = if v.ends_with('\\') {
                Unrepresentable::TrailingBackslash
            } else if v.trim_end() != v {
                Unrepresentable::Padding
            } else {
                continue;
            };
            return Err(RenderError::Value {
                param: format!("content [{}] {k}=", s.name),
                why,
            });
        }
    }
    Ok(unit)
}

fn structured(o: &ContainerOptions, secret_name: SecretNamer<'_>) -> Result<UnitFile, RenderError> {
    let mut u = UnitFile::default();
    add_pairs(&mut u, "Unit", "unit", &o.unit)?;
    let c = u.section_mut("Container");
    let mut put = |k: &str, v: &str, param: &str| -> Result<(), RenderError> {
        one_line(param, v)?;
        c.entries.push(Entry::new(k, v));
        Ok(())
    };
    put(
        "Image",
        o.image.as_deref().ok_or(RenderError::NoImage)?,
        "image",
    )?;
    if let Some(e) = &o.exec {
        put("Exec", e, "exec")?;
    }
    for (i, v) in o.volumes.iter().enumerate() {
        put("Volume", v, &format!("volumes[{i}]"))?;
    }
    // Sorted, so the order of a YAML dict cannot change the revision.
    for (k, v) in sorted(&o.env) {
        if !is_env_name(&k) {
            return Err(RenderError::EnvName(format!("env.{k}")));
        }
        put(
            "Environment",
            &quote_word(&format!("{k}={v}")),
            &format!("env.{k}"),
        )?;
    }
    for (k, v) in sorted(&o.secret_env) {
        let param = format!("secret_env.{k}");
        if !is_env_name(&k) {
            return Err(RenderError::EnvName(param));
        }
        if v.is_empty() {
            return Err(RenderError::EmptySecret(param));
        }
        put(
            "Secret",
            &format!("{},type=env,target={k}", secret_name(&k, &v)),
            &param,
        )?;
    }
    for (i, s) in o.secrets.iter().enumerate() {
        put("Secret", s, &format!("secrets[{i}]"))?;
    }
    if let Some(n) = &o.network {
        put("Network", n, "network")?;
    }
    for (i, p) in o.ports.iter().enumerate() {
        put("PublishPort", p, &format!("ports[{i}]"))?;
    }
    if let Some(h) = &o.health_cmd {
        put("HealthCmd", h, "health_cmd")?;
    }
    if let Some(h) = &o.health_interval {
        put("HealthInterval", h, "health_interval")?;
    }
    for (k, v) in sorted(&o.labels) {
        put(
            "Label",
            &quote_word(&format!("{k}={v}")),
            &format!("labels.{k}"),
        )?;
    }
    add_pairs(&mut u, "Container", "container", &o.container)?;
    add_pairs(&mut u, "Service", "service", &o.service)?;
    add_pairs(&mut u, "Install", "install", &o.install)?;
    Ok(u)
}

/// A name podman and the shell accept for an environment variable.
/// A name systemd and podman take as a variable's: letters, digits and '_', not first a digit.
pub fn is_env_name(k: &str) -> bool {
    k.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn add_pairs(
    u: &mut UnitFile,
    section: &str,
    what: &'static str,
    entries: &[String],
) -> Result<(), RenderError> {
    if entries.is_empty() {
        return Ok(());
    }
    let s = u.section_mut(section);
    for (i, e) in entries.iter().enumerate() {
        if e.contains(['\n', '\r']) {
            return Err(RenderError::Value {
                param: format!("{what}[{i}]"),
                why: Unrepresentable::Newline,
            });
        }
        let (k, v) = e
            .split_once('=')
            .filter(|(k, _)| {
                !k.trim().is_empty()
                    && k.trim()
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
            .ok_or_else(|| RenderError::NotAPair {
                what,
                entry: e.clone(),
            })?;
        let v = v.trim();
        one_line(&format!("{what}[{i}]"), v)?;
        s.entries.push(Entry::new(k.trim(), v));
    }
    Ok(())
}

/// Refuses a value the unit file could not hold as it is, naming the parameter it came from.
fn one_line(param: &str, v: &str) -> Result<(), RenderError> {
    check_value(v).map_err(|why| RenderError::Value {
        param: param.to_string(),
        why,
    })
}

fn sorted(m: &Map<String, Value>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = m
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), s)
        })
        .collect();
    v.sort();
    v
}

/// Quotes a word for quadlet's systemd-style word splitting when it needs it.
fn quote_word(w: &str) -> String {
    if w.chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '\\')
    {
        format!("\"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        w.to_string()
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
