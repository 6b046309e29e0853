//! A module's argument spec: the one list of its options.
//!
//! It drives validation and `--help`, and the sidecar docs under `plugins/modules/` are held
//! against it by a test. It describes; it does not validate (see `validate`).

use serde_json::Value;

/// The type of an option, with the coercions AnsibleModule applies to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Bool,
    Int,
    /// A list whose elements are of the given kind.
    List(Elem),
    Dict,
    /// A string that must be an absolute path.
    Path,
    Raw,
}

/// The element kinds a list option may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    Str,
    Int,
    Dict,
}

impl Kind {
    /// The name Ansible's docs use for this type.
    pub fn doc_name(self) -> &'static str {
        match self {
            Kind::Str => "str",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::List(_) => "list",
            Kind::Dict => "dict",
            Kind::Path => "path",
            Kind::Raw => "raw",
        }
    }
}

impl Elem {
    pub fn doc_name(self) -> &'static str {
        match self {
            Elem::Str => "str",
            Elem::Int => "int",
            Elem::Dict => "dict",
        }
    }
}

/// A default value, in a form that can sit in a `static`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    None,
    Str(&'static str),
    Bool(bool),
    Int(i64),
}

impl Default {
    pub fn to_value(self) -> Option<Value> {
        match self {
            Default::None => None,
            Default::Str(s) => Some(Value::from(s)),
            Default::Bool(b) => Some(Value::from(b)),
            Default::Int(i) => Some(Value::from(i)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub default: Default,
    pub choices: &'static [&'static str],
    pub aliases: &'static [&'static str],
    /// The value is a secret: masked wherever it appears in the result.
    pub no_log: bool,
    /// For `List(Elem::Dict)` options whose elements have their own options.
    pub suboptions: &'static [OptionSpec],
    /// What holds among the suboptions of each element, checked like a module's own rules.
    pub entry_rules: Rules,
    /// For `Int` options, the largest value validation accepts: every count and duration is
    /// bounded, so no arithmetic on it can overflow.
    pub max: i64,
    pub description: &'static str,
}

/// The bound of an `Int` option that sets none of its own: a billion seconds, milliseconds or
/// units is far beyond any real use, and far inside what a clock or a counter holds.
pub const INT_MAX: i64 = 1_000_000_000;
/// The bound of every timeout, in seconds: a week.
pub const TIMEOUT_MAX: i64 = 7 * 24 * 3600;

impl OptionSpec {
    /// An optional option with no default; set the rest with the builder methods.
    pub const fn new(name: &'static str, kind: Kind, description: &'static str) -> Self {
        OptionSpec {
            name,
            kind,
            required: false,
            default: Default::None,
            choices: &[],
            aliases: &[],
            no_log: false,
            suboptions: &[],
            entry_rules: Rules::NONE,
            max: INT_MAX,
            description,
        }
    }
    pub const fn max(mut self, max: i64) -> Self {
        self.max = max;
        self
    }
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub const fn default(mut self, default: Default) -> Self {
        self.default = default;
        self
    }
    pub const fn choices(mut self, choices: &'static [&'static str]) -> Self {
        self.choices = choices;
        self
    }
    pub const fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }
    pub const fn no_log(mut self) -> Self {
        self.no_log = true;
        self
    }
    pub const fn suboptions(mut self, suboptions: &'static [OptionSpec]) -> Self {
        self.suboptions = suboptions;
        self
    }
    pub const fn entry_rules(mut self, rules: Rules) -> Self {
        self.entry_rules = rules;
        self
    }
}

/// `required_if`: when `option` equals `value`, every one of `requires` must be set.
#[derive(Debug, Clone, Copy)]
pub struct RequiredIf {
    pub option: &'static str,
    pub value: &'static str,
    pub requires: &'static [&'static str],
}

/// The rules that hold among options given together: a module's, or those of each element of
/// a list of dicts.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub mutually_exclusive: &'static [&'static [&'static str]],
    pub required_one_of: &'static [&'static [&'static str]],
    pub required_if: &'static [RequiredIf],
}

impl Rules {
    pub const NONE: Rules = Rules {
        mutually_exclusive: &[],
        required_one_of: &[],
        required_if: &[],
    };
}

#[derive(Debug, Clone, Copy)]
pub struct ModuleSpec {
    pub name: &'static str,
    pub short_description: &'static str,
    pub options: &'static [OptionSpec],
    pub mutually_exclusive: &'static [&'static [&'static str]],
    pub required_one_of: &'static [&'static [&'static str]],
    pub required_if: &'static [RequiredIf],
}

impl ModuleSpec {
    pub fn rules(&self) -> Rules {
        Rules {
            mutually_exclusive: self.mutually_exclusive,
            required_one_of: self.required_one_of,
            required_if: self.required_if,
        }
    }

    pub fn option(&self, name: &str) -> Option<&OptionSpec> {
        find_option(self.options, name)
    }

    /// `--help` text, generated from the spec so it cannot drift from it.
    pub fn help(&self) -> String {
        let mut out = format!(
            "{} - {}\n\nAn Ansible module of the refit.containers collection.\n\
             Ansible runs it as: {} ARGS_FILE (a JSON object of parameters).\n\nOptions:\n",
            self.name, self.short_description, self.name
        );
        for o in self.options {
            let mut line = format!("  {} ({})", o.name, o.kind.doc_name());
            if o.required {
                line.push_str(", required");
            }
            if let Some(d) = o.default.to_value() {
                line.push_str(&format!(", default {d}"));
            }
            if !o.choices.is_empty() {
                line.push_str(&format!(", one of {}", o.choices.join("|")));
            }
            let description = o.description.replace('\n', "\n      ");
            out.push_str(&format!("{line}\n      {description}\n"));
        }
        out
    }
}

pub fn find_option<'a>(options: &'a [OptionSpec], name: &str) -> Option<&'a OptionSpec> {
    options
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// Joins two lists in a `const`, so a list shared by two specs is written once.
/// `C` must be `A + B`; a wrong length fails the build.
pub const fn join<T: Copy, const A: usize, const B: usize, const C: usize>(
    a: [T; A],
    b: [T; B],
) -> [T; C] {
    assert!(A + B == C, "join: C must be A + B");
    assert!(C > 0, "join: nothing to join");
    let mut out = if A > 0 { [a[0]; C] } else { [b[0]; C] };
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < B {
        out[A + j] = b[j];
        j += 1;
    }
    out
}
