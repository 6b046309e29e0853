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

    #[test]
    fn comments_blank_lines_and_spacing_are_dropped() {
        let text = "# head\n[Container]\n Image = a:1 \n\n; note\nExec=sleep \\\n  10\n[Service]\nRestart=always\n";
        let u = UnitFile::parse(text).expect("parses");
        assert_eq!(
            u.render(),
            "[Container]\nImage=a:1\nExec=sleep 10\n\n[Service]\nRestart=always\n"
        );
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
