//! The systemd unit file format: parse, render, and the canonical text a revision hashes.

use std::fmt::Write;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error(
        "line {0}: {1:?} is not `[Section]`, `Key=Value`, a comment or blank; fix the unit text"
    )]
    Syntax(usize, String),
    #[error(
        "line {0}: `{1}` comes before any [Section]; start the unit with [Unit] or [Container]"
    )]
    NoSection(usize, String),
}

/// Why a value cannot be written as `Key=Value` and read back the same.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum Unrepresentable {
    #[error(
        "contains a newline, which would inject lines into the unit file; put each value on one line"
    )]
    Newline,
    #[error("contains a control character, which a unit file cannot hold; remove it")]
    Control,
    #[error(
        "begins or ends with white space, which systemd drops when it reads the unit; remove it"
    )]
    Padding,
    #[error(
        "ends in a backslash, which systemd reads as a line continuation; remove it or add a character after it"
    )]
    TrailingBackslash,
}

/// Whether `parse` reads `Key=value` back as exactly `value`; the reason when it does not.
pub fn check_value(v: &str) -> Result<(), Unrepresentable> {
    if v.contains(['\n', '\r']) {
        return Err(Unrepresentable::Newline);
    }
    // A tab inside a value is plain white space to systemd; other control characters are not.
    if v.chars().any(|c| c.is_control() && c != '\t') {
        return Err(Unrepresentable::Control);
    }
    if v.trim() != v {
        return Err(Unrepresentable::Padding);
    }
    if v.ends_with('\\') {
        return Err(Unrepresentable::TrailingBackslash);
    }
    Ok(())
}

/// A unit as sections of ordered `Key=Value` entries. Keys repeat (`Environment=` twice) and
/// order matters to systemd, so neither is normalized.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnitFile {
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub entries: Vec<(String, String)>,
}

impl UnitFile {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut unit = UnitFile::default();
        let mut pending = String::new();
        let mut pending_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let lineno = i + 1;
            // A trailing backslash continues the line, as systemd reads it.
            if !pending.is_empty() {
                pending.push(' ');
            } else {
                pending_line = lineno;
            }
            let trimmed = raw.trim();
            if pending.is_empty()
                && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';'))
            {
                continue;
            }
            if let Some(cont) = trimmed.strip_suffix('\\') {
                pending.push_str(cont.trim_end());
                continue;
            }
            pending.push_str(trimmed);
            let line = std::mem::take(&mut pending);
            unit.add_line(pending_line, line.trim())?;
        }
        if !pending.is_empty() {
            let line = std::mem::take(&mut pending);
            unit.add_line(pending_line, line.trim())?;
        }
        Ok(unit)
    }

    fn add_line(&mut self, lineno: usize, line: &str) -> Result<(), ParseError> {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            self.section_mut(name.trim());
            return Ok(());
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(ParseError::Syntax(lineno, line.to_string()));
        };
        let key = k.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ParseError::Syntax(lineno, line.to_string()));
        }
        let Some(section) = self.sections.last_mut() else {
            return Err(ParseError::NoSection(lineno, line.to_string()));
        };
        section
            .entries
            .push((key.to_string(), v.trim().to_string()));
        Ok(())
    }

    /// The section of that name, created at the end if missing.
    pub fn section_mut(&mut self, name: &str) -> &mut Section {
        let idx = match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(Section {
                    name: name.to_string(),
                    entries: Vec::new(),
                });
                self.sections.len() - 1
            }
        };
        &mut self.sections[idx]
    }

    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Every value of `key` in `section`, in order.
    pub fn values<'a>(&'a self, section: &str, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.section(section).into_iter().flat_map(move |s| {
            s.entries
                .iter()
                .filter(move |(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        })
    }

    /// The last value of `key` in `section`: the one systemd and quadlet use.
    pub fn value<'a>(&'a self, section: &str, key: &'a str) -> Option<&'a str> {
        self.values(section, key).last()
    }

    /// Renders the unit, leaving out the entries `skip` matches.
    pub fn render_filtered(&self, skip: impl Fn(&str, &str, &str) -> bool) -> String {
        let mut out = String::new();
        for (i, s) in self.sections.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "[{}]", s.name);
            for (k, v) in &s.entries {
                if !skip(&s.name, k, v) {
                    let _ = writeln!(out, "{k}={v}");
                }
            }
        }
        out
    }

    pub fn render(&self) -> String {
        self.render_filtered(|_, _, _| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn comments_blank_lines_and_spacing_are_dropped() {
        let text = "# head\n[Container]\n Image = a:1 \n\n; note\nExec=sleep \\\n  10\n[Service]\nRestart=always\n";
        let u = UnitFile::parse(text).expect("parses");
        assert_eq!(
            u.render(),
            "[Container]\nImage=a:1\nExec=sleep 10\n\n[Service]\nRestart=always\n"
        );
    }

    /// A key as `add_line` accepts it.
    fn key() -> impl Strategy<Value = String> {
        "[A-Za-z][A-Za-z0-9_-]{0,12}"
    }

    /// Any printable value: ASCII, a few multi-byte characters, and the ones unit syntax
    /// treats specially (`\\`, quotes, `#`, `;`, `=`, `[`, `%`, `$`).
    fn value() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                proptest::char::range(' ', '~'),
                Just('é'),
                Just('€'),
                Just('\u{a0}'),
                Just('\t'),
            ],
            0..24,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    fn unit() -> impl Strategy<Value = UnitFile> {
        let section = (
            prop_oneof![
                Just("Unit"),
                Just("Container"),
                Just("Service"),
                Just("Install")
            ],
            proptest::collection::vec((key(), value()), 0..6),
        );
        proptest::collection::vec(section, 0..4).prop_map(|sections| {
            let mut u = UnitFile::default();
            for (name, entries) in sections {
                u.section_mut(name).entries.extend(entries);
            }
            u
        })
    }

    proptest! {
        /// Every unit whose values `check_value` accepts reads back as it was rendered; the
        /// values it refuses are exactly the ones that would not.
        #[test]
        fn render_then_parse_is_the_identity(u in unit()) {
            let representable = u
                .sections
                .iter()
                .all(|s| s.entries.iter().all(|(_, v)| check_value(v).is_ok()));
            let back = UnitFile::parse(&u.render());
            if representable {
                prop_assert_eq!(back, Ok(u));
            }
        }

        #[test]
        fn a_refused_value_would_not_survive(k in key(), v in value()) {
            let mut u = UnitFile::default();
            u.section_mut("Container").entries.push((k, v.clone()));
            let back = UnitFile::parse(&u.render());
            prop_assert_eq!(check_value(&v).is_ok(), back == Ok(u));
        }
    }

    #[test]
    fn junk_lines_are_errors() {
        assert!(matches!(
            UnitFile::parse("[A]\nnot a pair\n"),
            Err(ParseError::Syntax(2, _))
        ));
        assert!(matches!(
            UnitFile::parse("Image=x\n"),
            Err(ParseError::NoSection(1, _))
        ));
    }
}
