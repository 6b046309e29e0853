//! Validation and coercion of module parameters, the way AnsibleModule does it.
//!
//! Input is the args file's JSON object; output is a map keyed by canonical option names, with
//! defaults filled in and every value coerced to its option's kind. It never touches the host.

use super::spec::{Elem, Kind, ModuleSpec, OptionSpec, Rules, find_option};
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParamError {
    #[error(
        "Unsupported parameters for ({module}) module: {unknown}. Supported parameters include: {supported}."
    )]
    Unsupported {
        module: String,
        unknown: String,
        supported: String,
    },
    #[error("missing required arguments: {0}")]
    Missing(String),
    #[error(
        "argument '{name}' is of type {found} and we were unable to convert to {wanted}: {detail}"
    )]
    Type {
        name: String,
        found: &'static str,
        wanted: &'static str,
        detail: String,
    },
    /// Every int option of refit's modules counts something (seconds, milliseconds, units,
    /// revisions): a negative one is a mistake, named here rather than by the typed read after.
    #[error("value of {0} must be 0 or more, got: {1}")]
    Negative(String, i64),
    #[error("value of {0} must be at most {2}, got: {1}; give a smaller value")]
    TooLarge(String, i64, i64),
    #[error("value of {name} must be one of: {choices}, got: {got}")]
    Choice {
        name: String,
        choices: String,
        got: String,
    },
    #[error("parameters are mutually exclusive: {0}; give only one of them")]
    MutuallyExclusive(String),
    #[error("one of the following is required: {0}")]
    RequiredOneOf(String),
    #[error("{option} is {value} but all of the following are missing: {missing}")]
    RequiredIf {
        option: String,
        value: String,
        missing: String,
    },
    #[error(
        "argument '{0}' must be an absolute path, got '{1}'; give the full path starting with /"
    )]
    RelativePath(String, String),
}

/// Validates `args` (user parameters only; internal keys already removed) against the spec.
pub fn validate(
    spec: &ModuleSpec,
    args: &Map<String, Value>,
) -> Result<Map<String, Value>, ParamError> {
    let params = validate_options(spec.name, spec.options, args, "")?;
    check_rules(&spec.rules(), spec.options, &params, "")?;
    Ok(params)
}

fn validate_options(
    module: &str,
    options: &[OptionSpec],
    args: &Map<String, Value>,
    context: &str,
) -> Result<Map<String, Value>, ParamError> {
    let unknown: Vec<&str> = args
        .keys()
        .filter(|k| find_option(options, k).is_none())
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let mut unknown: Vec<String> = unknown.iter().map(|k| format!("{context}{k}")).collect();
        unknown.sort();
        return Err(ParamError::Unsupported {
            module: module.to_string(),
            unknown: unknown.join(", "),
            supported: supported_list(options),
        });
    }
    let mut out = Map::new();
    let mut missing = Vec::new();
    for o in options {
        let given = std::iter::once(o.name)
            .chain(o.aliases.iter().copied())
            .find_map(|k| args.get(k))
            .filter(|v| !v.is_null());
        let name = format!("{context}{}", o.name);
        match given {
            Some(v) => {
                let v = coerce(&name, o, v)?;
                let v = if o.suboptions.is_empty() {
                    v
                } else {
                    validate_suboptions(module, o, &name, v)?
                };
                out.insert(o.name.to_string(), v);
            }
            None if o.required => missing.push(name),
            None => {
                if let Some(d) = o.default.to_value() {
                    out.insert(o.name.to_string(), d);
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(ParamError::Missing(missing.join(", ")));
    }
    Ok(out)
}

fn validate_suboptions(
    module: &str,
    o: &OptionSpec,
    name: &str,
    v: Value,
) -> Result<Value, ParamError> {
    let Value::Array(items) = v else { return Ok(v) };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let map = item.as_object().cloned().unwrap_or_default();
        let context = format!("{name}[{i}].");
        let sub = validate_options(module, o.suboptions, &map, &context)?;
        check_rules(&o.entry_rules, o.suboptions, &sub, &context)?;
        out.push(Value::Object(sub));
    }
    Ok(Value::Array(out))
}

fn supported_list(options: &[OptionSpec]) -> String {
    let mut names: Vec<String> = options
        .iter()
        .map(|o| {
            if o.aliases.is_empty() {
                o.name.to_string()
            } else {
                format!("{} ({})", o.name, o.aliases.join(", "))
            }
        })
        .collect();
    names.sort();
    names.join(", ")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

fn coerce(name: &str, o: &OptionSpec, v: &Value) -> Result<Value, ParamError> {
    let type_err = |wanted: &'static str, detail: String| ParamError::Type {
        name: name.to_string(),
        found: type_name(v),
        wanted,
        // A secret's value must not reach the message, masked or not.
        detail: if o.no_log {
            format!("the value is not shown, as {name} is a no_log option")
        } else {
            detail
        },
    };
    let coerced = match o.kind {
        Kind::Raw => v.clone(),
        Kind::Str | Kind::Path => {
            let s = coerce_str(v).ok_or_else(|| type_err("str", format!("{v} is not a string")))?;
            if o.kind == Kind::Path && !s.starts_with('/') {
                return Err(ParamError::RelativePath(name.to_string(), s));
            }
            Value::String(s)
        }
        Kind::Bool => Value::Bool(coerce_bool(v).ok_or_else(|| {
            type_err(
                "bool",
                format!("{v} is not a valid boolean; use yes/no, true/false, on/off or 1/0"),
            )
        })?),
        Kind::Int => {
            let n = coerce_int(v)
                .ok_or_else(|| type_err("int", format!("{v} cannot be converted to an int")))?;
            if n < 0 {
                return Err(ParamError::Negative(name.to_string(), n));
            }
            if n > o.max {
                return Err(ParamError::TooLarge(name.to_string(), n, o.max));
            }
            Value::from(n)
        }
        Kind::Dict => coerce_dict(v)
            .ok_or_else(|| type_err("dict", format!("{v} cannot be converted to a dict")))?,
        Kind::List(elem) => {
            let items = match v {
                Value::Array(a) => a.clone(),
                // AnsibleModule splits a string list on commas.
                Value::String(s) => s.split(',').map(|p| Value::from(p.trim())).collect(),
                other => vec![other.clone()],
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let elem_err = |wanted: &'static str| ParamError::Type {
                    name: format!("{name}[{i}]"),
                    found: type_name(item),
                    wanted,
                    detail: if o.no_log {
                        format!("the value is not shown, as {name} is a no_log option")
                    } else {
                        format!("{item} is not a valid {wanted}")
                    },
                };
                out.push(match elem {
                    Elem::Str => Value::String(coerce_str(item).ok_or_else(|| elem_err("str"))?),
                    Elem::Int => Value::from(coerce_int(item).ok_or_else(|| elem_err("int"))?),
                    Elem::Dict => coerce_dict(item).ok_or_else(|| elem_err("dict"))?,
                });
            }
            Value::Array(out)
        }
    };
    if !o.choices.is_empty() {
        let got = match &coerced {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !o.choices.contains(&got.as_str()) {
            return Err(ParamError::Choice {
                name: name.to_string(),
                choices: o.choices.join(", "),
                got,
            });
        }
    }
    Ok(coerced)
}

fn coerce_str(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_string()),
        _ => None,
    }
}

/// AnsibleModule's BOOLEANS_TRUE and BOOLEANS_FALSE, compared without case.
pub fn coerce_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
            "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn coerce_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn coerce_dict(v: &Value) -> Option<Value> {
    match v {
        Value::Object(_) => Some(v.clone()),
        // AnsibleModule accepts a JSON string or "k=v, k2=v2".
        Value::String(s) if s.trim_start().starts_with('{') => serde_json::from_str(s).ok(),
        Value::String(s) => {
            let mut m = Map::new();
            for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, val) = pair.split_once('=')?;
                m.insert(k.trim().to_string(), Value::from(val.trim()));
            }
            Some(Value::Object(m))
        }
        _ => None,
    }
}

/// Checks `rules` among `params`, which `options` describe; errors name each parameter with
/// `context` before it (`units[0].` for an entry).
fn check_rules(
    rules: &Rules,
    options: &[OptionSpec],
    params: &Map<String, Value>,
    context: &str,
) -> Result<(), ParamError> {
    let set = |k: &str| params.get(k).is_some_and(|v| !v.is_null());
    let named = |keys: &[&str]| {
        keys.iter()
            .map(|k| format!("{context}{k}"))
            .collect::<Vec<_>>()
    };
    for group in rules.mutually_exclusive {
        let given: Vec<&str> = group
            .iter()
            .copied()
            .filter(|k| given_in(options, params, k))
            .collect();
        if given.len() > 1 {
            return Err(ParamError::MutuallyExclusive(named(&given).join("|")));
        }
    }
    for group in rules.required_one_of {
        if !group.iter().any(|k| set(k)) {
            return Err(ParamError::RequiredOneOf(named(group).join(", ")));
        }
    }
    for r in rules.required_if {
        let matches = params.get(r.option).and_then(Value::as_str) == Some(r.value);
        if matches {
            let missing: Vec<&str> = r.requires.iter().copied().filter(|k| !set(k)).collect();
            if !missing.is_empty() {
                return Err(ParamError::RequiredIf {
                    option: format!("{context}{}", r.option),
                    value: r.value.to_string(),
                    missing: named(&missing).join(", "),
                });
            }
        }
    }
    Ok(())
}

/// A parameter counts as given for `mutually_exclusive` only when it has no default, or the
/// user's value is not simply the default filled in. An empty list or dict is not given.
fn given_in(options: &[OptionSpec], params: &Map<String, Value>, k: &str) -> bool {
    match (params.get(k), find_option(options, k)) {
        (Some(v), Some(o)) => {
            let empty = match v {
                Value::Null => true,
                Value::Array(a) => a.is_empty(),
                Value::Object(m) => m.is_empty(),
                _ => false,
            };
            !empty && o.default.to_value().as_ref() != Some(v)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(spec: &ModuleSpec, args: Value) -> String {
        let Value::Object(args) = args else {
            panic!("args must be an object")
        };
        match validate(spec, &args) {
            Ok(p) => panic!("accepted: {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// A negative count is refused by name, before the typed read (which would only say that
    /// some integer did not fit).
    #[test]
    fn a_negative_count_is_refused_by_name() {
        let flow = &crate::flow::spec::SPEC;
        let msg = refusal(
            flow,
            json!({"flow": "update", "stream": "1.0", "min_healthy_time": -1}),
        );
        assert_eq!(msg, "value of min_healthy_time must be 0 or more, got: -1");
    }

    #[test]
    fn a_timeout_past_its_bound_is_refused_by_name() {
        let units = &crate::container_unit::spec::SPEC;
        let msg = refusal(units, json!({"name": "a", "image": "a:1", "timeout": 1e30}));
        assert!(
            msg.starts_with("value of timeout must be at most 604800"),
            "{msg}"
        );
        let counts = refusal(
            units,
            json!({"name": "a", "image": "a:1", "keep_revisions": 1e12}),
        );
        assert!(
            counts.starts_with("value of keep_revisions must be at most"),
            "{counts}"
        );
    }

    /// An entry of a list is held to its own rules, and the refusal names the entry.
    #[test]
    fn entries_are_held_to_their_rules() {
        let units = &crate::container_unit::spec::SPEC;
        let msg = refusal(
            units,
            json!({"units": [{"name": "a", "image": "x:1"}, {"name": "b", "content": "[Container]\nImage=x:1\n", "exec": "sleep 1"}]}),
        );
        assert!(msg.contains("units[1].content|units[1].exec"), "{msg}");
        let flow = &crate::flow::spec::SPEC;
        let msg = refusal(
            flow,
            json!({"flow": "update", "stream": "1.0", "run_id": "r",
                   "units": [{"name": "b", "content": "[Container]\nImage=x:1\n", "image": "x:1"}]}),
        );
        assert!(msg.contains("units[0].content|units[0].image"), "{msg}");
        let migrations = &crate::migrate::spec::SPEC;
        let msg = refusal(
            migrations,
            json!({"migrations": [{"unit": "app", "command": ["m"]}, {"command": ["m"]}]}),
        );
        assert!(
            msg.contains("migrations[1].unit, migrations[1].image"),
            "{msg}"
        );
        let msg = refusal(
            flow,
            json!({"flow": "update", "stream": "1.0", "run_id": "r",
                   "migrations": [{"unit": "app", "image": "x:1", "command": ["m"]}]}),
        );
        assert!(
            msg.contains("migrations[0].unit|migrations[0].image"),
            "{msg}"
        );
    }
}
