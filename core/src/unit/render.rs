//! From a module's structured options (or raw `content`) to the unit refit will write.

use super::file::{ParseError, UnitFile};
use crate::podman::reference::{ImageRef, RefError};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RenderError {
    #[error(
        "{0} contains a newline, which would inject lines into the unit file; put each value on one line"
    )]
    Newline(String),
    #[error(
        "{what} entry {entry:?} is not `Key=Value`; write it as, for example, `After=db.service`"
    )]
    NotAPair { what: &'static str, entry: String },
    #[error(
        "the unit has no image: set `image`, or an `Image=` line in the [Container] section of `content`"
    )]
    NoImage,
    #[error("the unit content does not parse: {0}")]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Image(#[from] RefError),
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
}

/// A desired unit: its parsed text and the image it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedUnit {
    pub unit: UnitFile,
    pub image: ImageRef,
}

pub fn render(opts: &ContainerOptions) -> Result<RenderedUnit, RenderError> {
    let mut unit = match &opts.content {
        Some(text) => UnitFile::parse(text)?,
        None => structured(opts)?,
    };
    if !opts.depends_on.is_empty() {
        let s = unit.section_mut("Unit");
        for d in &opts.depends_on {
            one_line("depends_on", d)?;
            let svc = super::name::service_name(d);
            s.entries.push(("Requires".into(), svc.clone()));
            s.entries.push(("After".into(), svc));
        }
        // [Unit] leads a unit file, as systemd's own files have it.
        if let Some(i) = unit.sections.iter().position(|s| s.name == "Unit") {
            let u = unit.sections.remove(i);
            unit.sections.insert(0, u);
        }
    }
    let image = unit
        .value("Container", "Image")
        .ok_or(RenderError::NoImage)?;
    let image = ImageRef::parse(image)?;
    Ok(RenderedUnit { unit, image })
}

fn structured(o: &ContainerOptions) -> Result<UnitFile, RenderError> {
    let mut u = UnitFile::default();
    add_pairs(&mut u, "Unit", "unit", &o.unit)?;
    let c = u.section_mut("Container");
    let mut put = |k: &str, v: &str, what: &str| -> Result<(), RenderError> {
        one_line(what, v)?;
        c.entries.push((k.to_string(), v.to_string()));
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
    for v in &o.volumes {
        put("Volume", v, "a volume")?;
    }
    // Sorted, so the order of a YAML dict cannot change the revision.
    for (k, v) in sorted(&o.env).into_iter().chain(sorted(&o.secret_env)) {
        put(
            "Environment",
            &quote_word(&format!("{k}={v}")),
            "an env value",
        )?;
    }
    for s in &o.secrets {
        put("Secret", s, "a secret")?;
    }
    if let Some(n) = &o.network {
        put("Network", n, "network")?;
    }
    for p in &o.ports {
        put("PublishPort", p, "a port")?;
    }
    if let Some(h) = &o.health_cmd {
        put("HealthCmd", h, "health_cmd")?;
    }
    if let Some(h) = &o.health_interval {
        put("HealthInterval", h, "health_interval")?;
    }
    for (k, v) in sorted(&o.labels) {
        put("Label", &quote_word(&format!("{k}={v}")), "a label")?;
    }
    add_pairs(&mut u, "Container", "container", &o.container)?;
    add_pairs(&mut u, "Service", "service", &o.service)?;
    add_pairs(&mut u, "Install", "install", &o.install)?;
    Ok(u)
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
    for e in entries {
        one_line(what, e)?;
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
        s.entries.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(())
}

fn one_line(what: &str, v: &str) -> Result<(), RenderError> {
    if v.contains('\n') || v.contains('\r') {
        return Err(RenderError::Newline(what.to_string()));
    }
    Ok(())
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
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: Value) -> ContainerOptions {
        serde_json::from_value(v).expect("options")
    }

    #[test]
    fn structured_options_render_a_unit() {
        let r = render(&opts(json!({
            "image": "127.0.0.1:5000/svc:1.0",
            "env": {"PORT": 18080, "GREETING": "hello world"},
            "volumes": ["app-data:/data"],
            "network": "host",
            "health_cmd": "wget -q -O /dev/null http://127.0.0.1:18080/version",
            "health_interval": "1s",
            "labels": {"tier": "web"},
            "unit": ["After=db.service"],
            "service": ["Restart=on-failure"],
            "install": ["WantedBy=multi-user.target"],
        })))
        .expect("renders");
        insta::assert_snapshot!(r.unit.render());
    }

    #[test]
    fn newlines_and_bad_pairs_are_refused() {
        assert_eq!(
            render(&opts(
                json!({"image": "a:1", "env": {"X": "1\nExecStartPre=/bin/evil"}})
            )),
            Err(RenderError::Newline("an env value".into()))
        );
        assert!(matches!(
            render(&opts(json!({"image": "a:1", "service": ["Restart"]}))),
            Err(RenderError::NotAPair { .. })
        ));
        assert_eq!(
            render(&opts(json!({"env": {"A": "1"}}))),
            Err(RenderError::NoImage)
        );
    }

    #[test]
    fn content_needs_an_image() {
        assert_eq!(
            render(&opts(json!({"content": "[Container]\nExec=sleep 1\n"}))),
            Err(RenderError::NoImage)
        );
    }
}
