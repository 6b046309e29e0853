//! The deployment file, read by refitctl before ansible-playbook gets it: a YAML mistake, or a
//! key a service entry does not take, is named with the file, the line and the column, and what
//! was expected. Ansible would say only "YAML parsing failed", and the modules would name an
//! unknown key without the file it came from.
//!
//! Only the shape is checked: values may be Jinja that only Ansible can render, so they are
//! skipped; a service entry's keys are container_unit's `units` options, the one list in
//! refit-core.

use refit_core::container_unit::spec::UNIT_ENTRY;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::path::{Path, PathBuf};

/// What is wrong with a deployment file.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    #[error(
        "the deployment file {path} cannot be read ({source}); check the path given to --deployment"
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {}; fix the deployment file and run again", place(.path, .source), problem(.source))]
    Invalid {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
}

/// `FILE:LINE:COLUMN`, as editors and compilers write a place, or the file alone when the
/// parser knew no place.
fn place(path: &Path, e: &serde_yaml::Error) -> String {
    match e.location() {
        Some(l) => format!("{}:{}:{}", path.display(), l.line(), l.column()),
        None => path.display().to_string(),
    }
}

/// What the parser says, without the place `place` already gave.
fn problem(e: &serde_yaml::Error) -> String {
    let text = e.to_string();
    match e.location() {
        Some(l) => text.replacen(
            &format!(" at line {} column {}", l.line(), l.column()),
            "",
            1,
        ),
        None => text,
    }
}

/// Reads and checks the deployment file at `path`.
pub fn check(path: &Path) -> Result<(), DeploymentError> {
    let text = std::fs::read_to_string(path).map_err(|source| DeploymentError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    check_text(&text).map_err(|source| DeploymentError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

fn check_text(text: &str) -> Result<(), serde_yaml::Error> {
    serde_yaml::Deserializer::from_str(text).deserialize_any(Vars)
}

/// The file: Ansible's extra vars, a mapping.
struct Vars;

impl<'de> Visitor<'de> for Vars {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping of variables (refit_services, refit_migrations, refit_stream, ...)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if key.0.as_deref() == Some("refit_services") {
                map.next_value_seed(Services)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    /// An empty file: Ansible reads it as no variables, and says what is missing itself.
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A mapping key: a string, or `None` for another scalar (Ansible allows them; refit reads none).
struct Key(Option<String>);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_yaml::Value::deserialize(d)?;
        Ok(Key(value.as_str().map(str::to_owned)))
    }
}

/// `refit_services`: a list of service entries, or a Jinja string that renders to one.
#[derive(Clone, Copy)]
struct Services;

impl<'de> Visitor<'de> for Services {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of service entries (each a mapping with `name`), or a Jinja string")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Entry)?.is_some() {}
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// One service entry: container_unit's `units` options. `<<` merges another mapping (an
/// anchor), whose keys are checked as the entry's own.
#[derive(Clone, Copy)]
struct Entry;

impl<'de> Visitor<'de> for Entry {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a service entry: a mapping with `name`, `image`, ... (or a Jinja string)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(EntryKeySeed)? {
            match key {
                EntryKey::Merge => map.next_value_seed(Entry)?,
                EntryKey::Known => map.next_value::<IgnoredAny>().map(drop)?,
            }
        }
        Ok(())
    }

    /// `<<: [*a, *b]` merges several mappings.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Entry)?.is_some() {}
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// A service entry's key, refused as it is read: the parser then places the error at the key
/// itself, not at the start of the entry.
enum EntryKey {
    /// `<<`, YAML's merge of another mapping.
    Merge,
    Known,
}

#[derive(Clone, Copy)]
struct EntryKeySeed;

/// Each checker is its own seed: the document says what it holds (a list, a mapping, a Jinja
/// string), and the checker, as its visitor, takes what it allows.
macro_rules! seed_of_itself {
    ($($checker:ty => $value:ty),* $(,)?) => {$(
        impl<'de> de::DeserializeSeed<'de> for $checker {
            type Value = $value;

            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    )*};
}

seed_of_itself!(Services => (), Entry => (), EntryKeySeed => EntryKey);

impl<'de> Visitor<'de> for EntryKeySeed {
    type Value = EntryKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a service entry's key, a name like `name` or `image`")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<EntryKey, E> {
        if key == "<<" {
            Ok(EntryKey::Merge)
        } else if known(key) {
            Ok(EntryKey::Known)
        } else {
            Err(E::custom(unknown(key)))
        }
    }
}

fn known(key: &str) -> bool {
    UNIT_ENTRY
        .iter()
        .any(|o| o.name == key || o.aliases.contains(&key))
}

/// The message for a key no service entry takes: the nearest known key when one is near
/// enough to be a slip, otherwise every key.
fn unknown(key: &str) -> String {
    let nearest = UNIT_ENTRY
        .iter()
        .map(|o| (distance(key, o.name), o.name))
        .min();
    match nearest {
        Some((d, name)) if d <= key.chars().count().div_ceil(3).max(2) => {
            format!("unknown key `{key}` in a service entry (did you mean `{name}`?)")
        }
        _ => {
            let names: Vec<&str> = UNIT_ENTRY.iter().map(|o| o.name).collect();
            format!(
                "unknown key `{key}` in a service entry; a service entry takes {}",
                names.join(", ")
            )
        }
    }
}

/// Edit distance (insertions, deletions, substitutions) between two keys, by the one-row
/// dynamic programme; keys are a few characters long.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
