//! From a module's structured options (or raw `content`) to the unit refit will write.

use super::file::{ParseError, UnitFile, Unrepresentable, check_value};
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
        "Image={0} names a quadlet .{1} unit, not an image in a registry; refit does not manage .image and .build units yet: give the image reference itself"
    )]
    ImageUnit(String, &'static str),
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

/// A desired unit: its parsed text and the image it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedUnit {
    pub unit: UnitFile,
    pub image: ImageRef,
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
        s.entries.push(("Wants".into(), svc.clone()));
        s.entries.push(("After".into(), svc));
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
    for kind in ["image", "build"] {
        if image.ends_with(&format!(".{kind}")) {
            return Err(RenderError::ImageUnit(image.to_string(), kind));
        }
    }
    let image = ImageRef::parse(image)?;
    Ok(RenderedUnit { unit, image })
}

/// The parsed `content`, if refit can write each of its values back as it read it: a value
/// that ends in a backslash or in white space (only the file's last line can hold one) would
/// join the next line, or lose its end, once written.
fn writable(unit: UnitFile) -> Result<UnitFile, RenderError> {
    for s in &unit.sections {
        for (k, v) in &s.entries {
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
    for (i, v) in o.volumes.iter().enumerate() {
        put("Volume", v, &format!("volumes[{i}]"))?;
    }
    // Sorted, so the order of a YAML dict cannot change the revision.
    for (k, v) in sorted(&o.env) {
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
fn is_env_name(k: &str) -> bool {
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
        s.entries.push((k.trim().to_string(), v.to_string()));
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
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn opts(v: Value) -> ContainerOptions {
        serde_json::from_value(v).expect("options")
    }

    fn render(o: &ContainerOptions) -> Result<RenderedUnit, RenderError> {
        super::render(o, &|k, _| format!("refit-test-{k}"))
    }

    proptest! {
        /// An `env` value comes back from quadlet's word splitting exactly as it was given.
        #[test]
        fn quoted_words_split_back(v in "[ -~é€]{0,24}") {
            let word = format!("K={v}");
            prop_assert_eq!(crate::unit::words::split(&quote_word(&word)), vec![word]);
        }
    }

    #[test]
    fn secret_env_values_stay_out_of_the_unit() {
        let r = render(&opts(
            json!({"image": "a:1", "secret_env": {"DB_PASSWORD": "hunter22"}}),
        ))
        .expect("renders");
        let text = r.unit.render();
        assert!(!text.contains("hunter22"), "{text}");
        assert!(
            text.contains("Secret=refit-test-DB_PASSWORD,type=env,target=DB_PASSWORD"),
            "{text}"
        );
        assert_eq!(
            render(&opts(json!({"image": "a:1", "secret_env": {"A B": "x"}}))),
            Err(RenderError::EnvName("secret_env.A B".into()))
        );
        assert_eq!(
            render(&opts(json!({"image": "a:1", "secret_env": {"A": ""}}))),
            Err(RenderError::EmptySecret("secret_env.A".into()))
        );
    }

    #[test]
    fn values_a_unit_cannot_hold_are_refused_by_parameter() {
        assert_eq!(
            render(&opts(json!({"image": "a:1", "exec": "sleep 1 "}))),
            Err(RenderError::Value {
                param: "exec".into(),
                why: Unrepresentable::Padding
            })
        );
        assert_eq!(
            render(&opts(
                json!({"image": "a:1", "volumes": ["a:/b", "c:/d\\"]})
            )),
            Err(RenderError::Value {
                param: "volumes[1]".into(),
                why: Unrepresentable::TrailingBackslash
            })
        );
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
            Err(RenderError::Value {
                param: "env.X".into(),
                why: Unrepresentable::Newline
            })
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
    fn an_image_or_build_unit_is_not_taken_for_a_registry_name() {
        for (image, kind) in [("app.image", "image"), ("\"app.build\"", "build")] {
            let content = format!("[Container]\nImage={image}\n");
            assert_eq!(
                render(&opts(json!({ "content": content }))),
                Err(RenderError::ImageUnit(image.trim_matches('"').into(), kind))
            );
        }
    }

    #[test]
    fn content_needs_an_image() {
        assert_eq!(
            render(&opts(json!({"content": "[Container]\nExec=sleep 1\n"}))),
            Err(RenderError::NoImage)
        );
    }
}
