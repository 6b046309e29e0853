//! Unit names: what systemd accepts, minus what could escape the quadlet dir.

use super::kind::Kind;
use std::fmt;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum NameError {
    #[error("unit name is empty; give the service's name, for example `hello` or `worker@`")]
    Empty,
    #[error(
        "unit name {0:?} contains {1}; a unit name is a plain file name: letters, digits and :_.@- only"
    )]
    BadChar(String, &'static str),
    #[error("unit name {0:?} is longer than 255 characters; choose a shorter name")]
    TooLong(String),
    #[error(
        "unit name {0:?} must end in a quadlet suffix (.container, .network, .volume, .pod, .image, .build), or have none for a .container"
    )]
    Suffix(String),
    #[error(transparent)]
    Kind(#[from] super::kind::KindError),
    #[error(
        "unit name {0:?} is a template of a {1} unit; refit runs templates of .container units only: name each {1} unit on its own"
    )]
    ResourceTemplate(String, super::kind::Kind),
    #[error(
        "unit name {0:?} has nothing before its @; a template is NAME@, an instance file NAME@INSTANCE"
    )]
    NoPrefix(String),
    #[error(
        "unit name {0:?} has more than one @; a template is NAME@, an instance file NAME@INSTANCE"
    )]
    ManyAt(String),
}

/// A validated quadlet unit name: `hello` (a `.container`), the template `worker@`, the
/// instance file `report@daily`, or a unit of another kind (`app.network`, `db.volume`). An
/// instance file holds a unit of its own (quadlet generates `report@daily.service` from its own
/// text), so refit manages it as a plain unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitName {
    /// The name without its suffix: `hello`, `worker@`.
    stem: String,
    kind: Kind,
}

impl UnitName {
    pub fn parse(raw: &str) -> Result<Self, NameError> {
        validate_systemd_unit(raw)?;
        let (stem, kind) = match raw.rsplit_once('.') {
            Some((stem, ext)) => match Kind::from_ext(ext) {
                Some(kind) => (stem, kind),
                None => (raw, Kind::Container),
            },
            None => (raw, Kind::Container),
        };
        kind.managed(raw)?;
        if stem.is_empty() {
            return Err(NameError::Empty);
        }
        if stem.contains('.')
            && stem
                .rsplit_once('.')
                .is_some_and(|(_, ext)| is_unit_suffix(ext))
        {
            return Err(NameError::Suffix(raw.to_string()));
        }
        match stem.matches('@').count() {
            0 => {}
            1 if stem.starts_with('@') => return Err(NameError::NoPrefix(raw.to_string())),
            1 => {}
            _ => return Err(NameError::ManyAt(raw.to_string())),
        }
        if stem.ends_with('@') && kind != Kind::Container {
            return Err(NameError::ResourceTemplate(raw.to_string(), kind));
        }
        Ok(UnitName {
            stem: stem.to_string(),
            kind,
        })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn is_template(&self) -> bool {
        self.stem.ends_with('@')
    }

    /// The quadlet file name: `hello.container`, `db.volume`.
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.stem, self.kind.ext())
    }

    /// The service quadlet generates: `hello.service` (for a template, `worker@.service`),
    /// `db-volume.service`.
    pub fn service(&self) -> String {
        self.kind.service(&self.stem)
    }

    /// One instance's service: `worker@3.service`.
    pub fn instance_service(&self, instance: &str) -> String {
        format!("{}{instance}.service", self.stem)
    }

    pub fn stem(&self) -> &str {
        &self.stem
    }
}

impl fmt::Display for UnitName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file_name())
    }
}

fn is_unit_suffix(ext: &str) -> bool {
    matches!(
        ext,
        "service"
            | "socket"
            | "target"
            | "timer"
            | "mount"
            | "path"
            | "volume"
            | "network"
            | "image"
            | "pod"
            | "kube"
            | "build"
    )
}

fn bad_char(raw: &str) -> Option<&'static str> {
    // A command line would read it as an option.
    if raw.starts_with('-') {
        return Some("a leading -");
    }
    if raw.contains("..") {
        return Some("..");
    }
    if raw.contains('/') {
        return Some("a /");
    }
    if raw.contains('\n') || raw.contains('\r') {
        return Some("a newline");
    }
    if raw.chars().any(char::is_whitespace) {
        return Some("white space");
    }
    raw.chars()
        .any(|c| !(c.is_ascii_alphanumeric() || ":_.@-\\".contains(c)))
        .then_some("a character systemd does not allow")
}

/// `db` means `db.service` (and `db.container` too), `db.volume` means `db-volume.service`; a
/// name with a systemd unit suffix stays as it is.
pub fn service_name(name: &str) -> String {
    let suffix = name.rsplit_once('.').map(|(_, s)| s);
    if let Some("service" | "target" | "socket" | "timer" | "mount" | "path" | "slice" | "scope") =
        suffix
    {
        return name.to_string();
    }
    // `db.volume` means the service quadlet makes of it, `db-volume.service`.
    match name.rsplit_once('.') {
        Some((stem, ext)) => match Kind::from_ext(ext) {
            Some(kind) => kind.service(stem),
            None => format!("{name}.service"),
        },
        None => format!("{name}.service"),
    }
}

/// Validates a systemd unit name of any type (`db.service`, `app.target`, `worker@2.service`),
/// as the stop and migrate modules take them.
pub fn validate_systemd_unit(raw: &str) -> Result<(), NameError> {
    if raw.is_empty() {
        return Err(NameError::Empty);
    }
    if let Some(bad) = bad_char(raw) {
        return Err(NameError::BadChar(raw.to_string(), bad));
    }
    if raw.len() > 255 {
        return Err(NameError::TooLong(raw.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_template_names_parse() {
        let n = UnitName::parse("hello").expect("valid");
        assert_eq!(
            (n.file_name(), n.service()),
            ("hello.container".into(), "hello.service".into())
        );
        let t = UnitName::parse("worker@.container").expect("valid");
        assert!(t.is_template());
        assert_eq!(t.instance_service("3"), "worker@3.service");
        let i = UnitName::parse("report@daily.container").expect("valid");
        assert!(!i.is_template());
        assert_eq!(
            (i.file_name(), i.service()),
            (
                "report@daily.container".into(),
                "report@daily.service".into()
            )
        );
    }

    #[test]
    fn names_that_could_escape_or_inject_are_refused() {
        for bad in [
            "",
            "../x",
            "a/b",
            "a\nb",
            "a b",
            "x..y",
            "a$b",
            ".container",
            "-a",
            "a\u{7}b",
        ] {
            assert!(UnitName::parse(bad).is_err(), "{bad:?} was accepted");
        }
        for bad in ["-a.service", "-.mount", "a\tb.service", "a\u{1b}.service"] {
            assert!(validate_systemd_unit(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(matches!(
            UnitName::parse("@1"),
            Err(NameError::NoPrefix(..))
        ));
        assert!(matches!(
            UnitName::parse("hello.service"),
            Err(NameError::Suffix(_))
        ));
    }

    #[test]
    fn every_managed_kind_has_its_file_and_service() {
        for (raw, file, service) in [
            ("app.network", "app.network", "app-network.service"),
            ("db.volume", "db.volume", "db-volume.service"),
            ("stack.pod", "stack.pod", "stack-pod.service"),
            ("app.image", "app.image", "app-image.service"),
            ("app.build", "app.build", "app-build.service"),
        ] {
            let n = UnitName::parse(raw).expect(raw);
            assert_eq!((n.file_name(), n.service()), (file.into(), service.into()));
        }
        assert!(matches!(UnitName::parse("k.kube"), Err(NameError::Kind(_))));
        assert!(matches!(
            UnitName::parse("n@.network"),
            Err(NameError::ResourceTemplate(..))
        ));
    }
}
