//! `no_log` masking: a secret's value never leaves the module in the clear.
//!
//! A value equal to a secret becomes `VALUE_SPECIFIED_IN_NO_LOG_PARAMETER`, as Ansible does;
//! a secret inside a longer string (a unit file in a diff, say) becomes `********`.

use super::spec::OptionSpec;
use serde_json::{Map, Value};

pub const MASKED_VALUE: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";
pub const MASKED_SUBSTRING: &str = "********";

/// Collects the secret strings held by `no_log` options, in nested options too.
pub fn secrets(options: &[OptionSpec], params: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for o in options {
        let Some(v) = params.get(o.name) else {
            continue;
        };
        if o.no_log {
            collect_strings(v, &mut out);
        } else if !o.suboptions.is_empty() {
            // A list of dicts, or one dict (a migration's `backup`), each with its own options.
            let one = v.as_object().into_iter();
            for m in v
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .chain(one)
            {
                out.extend(secrets(o.suboptions, m));
            }
        }
    }
    finish(out)
}

/// The forms a secret takes once written into a unit or a quoted word: `\` and `"` escaped,
/// and `%` doubled as systemd's specifiers need. Each is masked like the value itself.
pub fn with_escaped_forms(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    for v in values {
        let quoted = v.replace('\\', "\\\\").replace('"', "\\\"");
        for form in [quoted.replace('%', "%%"), quoted, v.replace('%', "%%")] {
            if form != v {
                out.push(form);
            }
        }
        out.push(v);
    }
    finish(out)
}

/// Longest first, so a secret holding another is masked whole.
fn finish(mut out: Vec<String>) -> Vec<String> {
    // Masking "" or a single character would shred the whole result.
    out.retain(|s| s.len() > 1);
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Masks every secret in `v`, recursively.
pub fn mask(v: &mut Value, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    match v {
        Value::String(s) => {
            if secrets.iter().any(|x| x == s) {
                *s = MASKED_VALUE.to_string();
            } else {
                for x in secrets {
                    if s.contains(x.as_str()) {
                        *s = s.replace(x.as_str(), MASKED_SUBSTRING);
                    }
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mask(x, secrets)),
        Value::Object(m) => m.values_mut().for_each(|x| mask(x, secrets)),
        _ => {}
    }
}

/// The `invocation.module_args` Ansible shows: `no_log` options replaced whole.
pub fn masked_args(options: &[OptionSpec], params: &Map<String, Value>) -> Map<String, Value> {
    let mut out = params.clone();
    for o in options {
        let Some(v) = out.get_mut(o.name) else {
            continue;
        };
        if o.no_log {
            *v = Value::from(MASKED_VALUE);
        } else if !o.suboptions.is_empty() {
            match v {
                Value::Array(items) => {
                    for m in items.iter_mut().filter_map(Value::as_object_mut) {
                        *m = masked_args(o.suboptions, m);
                    }
                }
                Value::Object(m) => *m = masked_args(o.suboptions, m),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_values_and_substrings_are_masked() {
        let secrets = vec!["hunter22".to_string()];
        let mut v =
            json!({"a": "hunter22", "diff": {"after": "Environment=PW=hunter22\n"}, "n": 3});
        mask(&mut v, &secrets);
        assert_eq!(
            v,
            json!({"a": MASKED_VALUE, "diff": {"after": "Environment=PW=********\n"}, "n": 3})
        );
    }

    #[test]
    fn escaped_forms_are_masked_too() {
        let secrets = with_escaped_forms([r#"a"b\c%d"#.to_string()]);
        let mut v = json!({"diff": {"before": r#"Environment="PW=a\"b\\c%%d""#}});
        mask(&mut v, &secrets);
        assert_eq!(
            v,
            json!({"diff": {"before": r#"Environment="PW=********""#}})
        );
    }

    #[test]
    fn a_no_log_option_in_a_dict_within_a_list_is_masked() {
        let params = json!({"migrations": [{"unit": "api", "backup": {
            "image": "pg:17", "env": {"PGUSER": "pulp"}, "secret_env": {"PGPASSWORD": "hunter22"},
        }}]});
        let params = params.as_object().expect("object");
        let options = &crate::migrate::spec::SPEC.options;
        assert_eq!(secrets(options, params), ["hunter22"]);
        let args = Value::Object(masked_args(options, params));
        assert_eq!(
            args["migrations"][0]["backup"]["secret_env"],
            json!(MASKED_VALUE),
            "{args}"
        );
        assert_eq!(
            args["migrations"][0]["backup"]["env"],
            json!({"PGUSER": "pulp"})
        );
    }
}
