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
    #[error(
        "line {0}: {1:?} is not a valid section header; a name is not empty and has no [, ] or control characters"
    )]
    Section(usize, String),
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

/// quadlet's comment lines: blank, or starting with `#` or `;` (after trimming).
fn is_comment(line: &str) -> bool {
    line.is_empty() || line.starts_with('#') || line.starts_with(';')
}

/// The name of a `[Section]` line: `[` first, and nothing but spaces or tabs after the first `]`.
fn group_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('[')?;
    let (name, after) = rest.split_once(']')?;
    after.chars().all(|c| c == ' ' || c == '\t').then_some(name)
}

/// A single value as quadlet's `Lookup` reads it.
pub fn unquote(v: &str) -> &str {
    let v = v.trim_end();
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
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
    pub entries: Vec<Entry>,
}

/// One `Key=Value` line of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
}

impl Entry {
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
        }
    }
}

impl UnitFile {
    /// Reads `text` as quadlet's own parser does (podman's `pkg/systemd/parser`), so the unit
    /// refit judges, hashes and writes is the one quadlet will generate a service from:
    /// - lines are trimmed of white space; blank lines and `#`/`;` lines are comments;
    /// - a trailing `\` joins the next line on with nothing in between (`hello\` then
    ///   `world` is `helloworld`), and comments or blank lines inside a continuation are
    ///   skipped; on the last line the backslash is dropped;
    /// - a section header that appears again continues that section: later entries go there,
    ///   not to the section opened last;
    /// - a value keeps what it says, quotes and escapes included; `value` unquotes as quadlet
    ///   reads a single value.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut unit = UnitFile::default();
        let mut current: Option<usize> = None;
        let lines: Vec<&str> = text
            .strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .collect();
        let last = lines.len().saturating_sub(1);
        let mut pending = String::new();
        let mut pending_line = 0;
        for (i, raw) in lines.iter().enumerate() {
            let lineno = i + 1;
            let trimmed = raw.trim();
            if is_comment(trimmed) {
                continue;
            }
            if pending.is_empty() {
                pending_line = lineno;
            }
            match trimmed.strip_suffix('\\') {
                Some(head) if i != last => {
                    pending.push_str(head);
                    continue;
                }
                Some(head) => pending.push_str(head),
                None => pending.push_str(trimmed),
            }
            let line = std::mem::take(&mut pending);
            unit.add_line(&mut current, pending_line, &line)?;
        }
        // quadlet drops a continuation that only comments follow; so does refit, to agree.
        Ok(unit)
    }

    fn add_line(
        &mut self,
        current: &mut Option<usize>,
        lineno: usize,
        line: &str,
    ) -> Result<(), ParseError> {
        if let Some(name) = group_name(line) {
            if name.is_empty() || name.chars().any(|c| c == '[' || c.is_control()) {
                return Err(ParseError::Section(lineno, line.to_string()));
            }
            *current = Some(self.section_index(name));
            return Ok(());
        }
        let Some((k, v)) = line.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(ParseError::Syntax(lineno, line.to_string()));
        };
        let Some(idx) = *current else {
            return Err(ParseError::NoSection(lineno, line.to_string()));
        };
        self.sections[idx]
            .entries
            .push(Entry::new(k.trim_end(), v.trim_start()));
        Ok(())
    }

    /// The index of the section of that name, created at the end if missing.
    fn section_index(&mut self, name: &str) -> usize {
        match self.sections.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sections.push(Section {
                    name: name.to_string(),
                    entries: Vec::new(),
                });
                self.sections.len() - 1
            }
        }
    }

    /// The section of that name, created at the end if missing.
    pub fn section_mut(&mut self, name: &str) -> &mut Section {
        let idx = self.section_index(name);
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
                .filter(move |e| e.key == key)
                .map(|e| e.value.as_str())
        })
    }

    /// The last value of `key` in `section`, as quadlet reads a single value: trailing white
    /// space dropped, and one pair of surrounding double quotes taken off
    /// (`Image="localhost/app"` names `localhost/app`).
    pub fn value<'a>(&'a self, section: &str, key: &'a str) -> Option<&'a str> {
        self.values(section, key).last().map(unquote)
    }

    /// Renders the unit, leaving out the entries `skip` matches.
    pub fn render_filtered(&self, skip: impl Fn(&str, &str, &str) -> bool) -> String {
        let mut out = String::new();
        for (i, s) in self.sections.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "[{}]", s.name);
            for e in &s.entries {
                if !skip(&s.name, &e.key, &e.value) {
                    let _ = writeln!(out, "{}={}", e.key, e.value);
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
                u.section_mut(name)
                    .entries
                    .extend(entries.into_iter().map(|(k, v)| Entry::new(k, v)));
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
                .all(|s| s.entries.iter().all(|e| check_value(&e.value).is_ok()));
            let back = UnitFile::parse(&u.render());
            if representable {
                prop_assert_eq!(back, Ok(u));
            }
        }

        #[test]
        fn a_refused_value_would_not_survive(k in key(), v in value()) {
            let mut u = UnitFile::default();
            u.section_mut("Container").entries.push(Entry::new(k, v.clone()));
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
