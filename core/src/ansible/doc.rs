//! The `options:` part of a module's sidecar docs (plugins/modules/NAME.yml), rendered from its
//! spec: `NAME --doc` prints it, `make sidecars` puts it into the sidecar, and a test fails when
//! the sidecar's copy differs. Prose, EXAMPLES and RETURN stay hand-written there.

use super::spec::{Kind, ModuleSpec, OptionSpec};

/// How deep the sidecar's `options:` key sits: under `DOCUMENTATION:`.
const INDENT: usize = 2;

/// Where description lines are folded.
const WIDTH: usize = 100;

impl ModuleSpec {
    /// The `options:` block, as it stands in the sidecar (indented under `DOCUMENTATION:`).
    pub fn doc_options(&self) -> String {
        let mut out = format!("{}options:\n", " ".repeat(INDENT));
        options(&mut out, self.options, self.options, INDENT + 2);
        out
    }
}

/// `top` is the module's own options, which `O(...)` may link to.
fn options(out: &mut String, top: &[OptionSpec], list: &[OptionSpec], indent: usize) {
    let pad = " ".repeat(indent);
    for o in list {
        out.push_str(&format!("{pad}{}:\n", o.name));
        out.push_str(&format!("{pad}  description:\n"));
        // A paragraph a line: Ansible shows each item of the list as one.
        for para in o.description.split('\n').filter(|p| !p.trim().is_empty()) {
            let text = scalar(&links(&markup(para.trim()), top));
            out.push_str(&format!(
                "{pad}    - {}\n",
                wrap(&text, &format!("{pad}      "))
            ));
        }
        out.push_str(&format!("{pad}  type: {}\n", o.kind.doc_name()));
        if let Kind::List(e) = o.kind {
            out.push_str(&format!("{pad}  elements: {}\n", e.doc_name()));
        }
        if o.required {
            out.push_str(&format!("{pad}  required: true\n"));
        }
        if let Some(d) = o.default.to_value() {
            let text = match d.as_str() {
                Some(s) => scalar(s),
                None => d.to_string(),
            };
            out.push_str(&format!("{pad}  default: {text}\n"));
        }
        if !o.choices.is_empty() {
            out.push_str(&format!("{pad}  choices: {}\n", flow_list(o.choices)));
        }
        if !o.aliases.is_empty() {
            out.push_str(&format!("{pad}  aliases: {}\n", flow_list(o.aliases)));
        }
        if !o.suboptions.is_empty() {
            out.push_str(&format!("{pad}  suboptions:\n"));
            options(out, top, o.suboptions, indent + 4);
        }
    }
}

/// Ansible's markup for code: `x` in a spec's description is C(x) in the docs.
fn markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split('`');
    out.push_str(parts.next().unwrap_or_default());
    let mut open = true;
    for part in parts {
        out.push_str(if open { "C(" } else { ")" });
        out.push_str(part);
        open = !open;
    }
    out
}

/// `O(x)` links to the option `x` of this module; a description shared with another module
/// (a `units` entry in flow_state) may name one this module lacks, which is then plain code.
fn links(text: &str, top: &[OptionSpec]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("O(") {
        let (before, tail) = rest.split_at(i);
        out.push_str(before);
        let Some(end) = tail.find(')') else {
            out.push_str(tail);
            return out;
        };
        let inner = &tail[2..end];
        let root = inner.split(['=', '[', '.']).next().unwrap_or_default();
        let known = inner.contains('#') || top.iter().any(|o| o.name == root);
        out.push_str(if known { "O(" } else { "C(" });
        out.push_str(inner);
        out.push(')');
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A YAML scalar: plain where YAML reads it back as the same string, else double-quoted
/// (JSON's escapes are YAML's).
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c) || c.is_whitespace())
        && !s.ends_with(|c: char| c == ':' || c.is_whitespace())
        && !s.contains(": ")
        && !s.contains(" #")
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        )
        && s.parse::<f64>().is_err();
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// Folds a long scalar at spaces onto continuation lines, which YAML joins back with one
/// space, so no sidecar line runs past the line-length lint.
fn wrap(text: &str, continuation: &str) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        // A line YAML would read otherwise (a comment, an entry) never starts with the word.
        let breakable = word.starts_with(|c: char| c.is_alphanumeric());
        if line > 0 && breakable && line + 1 + word.len() > WIDTH - continuation.len() {
            out.push('\n');
            out.push_str(continuation);
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

fn flow_list(items: &[&str]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|i| {
            let s = scalar(i);
            // In a flow list a comma or bracket ends the item.
            if s.contains([',', '[', ']', '{', '}']) && !s.starts_with('"') {
                serde_json::to_string(i).unwrap_or_default()
            } else {
                s
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ansible::{Default, Elem};

    #[test]
    fn an_option_renders_as_the_sidecar_writes_it() {
        static SUB: [OptionSpec; 1] = [OptionSpec::new("unit", Kind::Str, "The unit.")];
        static OPTS: [OptionSpec; 2] = [
            OptionSpec::new("state", Kind::Str, "`a` does this.\nC(b): that.")
                .default(Default::Str("a"))
                .choices(&["a", "b"]),
            OptionSpec::new(
                "items",
                Kind::List(Elem::Dict),
                "Several, by O(state=a) or O(gone).",
            )
            .required()
            .aliases(&["many"])
            .suboptions(&SUB),
        ];
        let spec = ModuleSpec {
            name: "m",
            short_description: "",
            options: &OPTS,
            mutually_exclusive: &[],
            required_one_of: &[],
            required_if: &[],
        };
        assert_eq!(
            spec.doc_options(),
            "  options:
    state:
      description:
        - C(a) does this.
        - \"C(b): that.\"
      type: str
      default: a
      choices: [a, b]
    items:
      description:
        - Several, by O(state=a) or C(gone).
      type: list
      elements: dict
      required: true
      aliases: [many]
      suboptions:
        unit:
          description:
            - The unit.
          type: str
"
        );
    }
}
