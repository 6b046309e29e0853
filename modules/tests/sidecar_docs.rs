//! The sidecar docs (plugins/modules/NAME.yml) and the Rust argument specs must not drift.

use refit_core::ansible::{Kind, ModuleSpec, OptionSpec};
use serde_yaml::Value;

fn modules() -> Vec<&'static ModuleSpec> {
    vec![
        &refit_core::container_unit::spec::SPEC,
        &refit_core::stop_services::spec::SPEC,
        &refit_core::migrate::spec::SPEC,
        &refit_core::flow::spec::SPEC,
    ]
}

fn doc_options(module: &str) -> serde_yaml::Mapping {
    let path = format!(
        "{}/../plugins/modules/{module}.yml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        doc["DOCUMENTATION"]["module"].as_str(),
        Some(module),
        "{path}: module name"
    );
    assert!(
        doc["EXAMPLES"].as_str().is_some_and(|e| !e.is_empty()),
        "{path}: EXAMPLES"
    );
    assert!(doc["RETURN"].is_mapping(), "{path}: RETURN");
    doc["DOCUMENTATION"]["options"]
        .as_mapping()
        .cloned()
        .unwrap_or_default()
}

/// What the docs must say of an option, rendered from the spec.
fn expected(o: &OptionSpec) -> Vec<(String, Value)> {
    let mut v = vec![("type".to_string(), Value::from(o.kind.doc_name()))];
    if let Kind::List(e) = o.kind {
        v.push(("elements".into(), Value::from(e.doc_name())));
    }
    v.push(("required".into(), Value::from(o.required)));
    let default = o
        .default
        .to_value()
        .map(|d| serde_yaml::to_value(d).expect("yaml"));
    v.push(("default".into(), default.unwrap_or(Value::Null)));
    let choices: Vec<Value> = o.choices.iter().map(|c| Value::from(*c)).collect();
    v.push((
        "choices".into(),
        if choices.is_empty() {
            Value::Null
        } else {
            Value::Sequence(choices)
        },
    ));
    let aliases: Vec<Value> = o.aliases.iter().map(|c| Value::from(*c)).collect();
    v.push((
        "aliases".into(),
        if aliases.is_empty() {
            Value::Null
        } else {
            Value::Sequence(aliases)
        },
    ));
    v
}

/// Holds documented options against spec options, recursing into suboptions.
fn check_options(module: &str, context: &str, docs: &serde_yaml::Mapping, options: &[OptionSpec]) {
    let mut doc_names: Vec<&str> = docs.keys().filter_map(Value::as_str).collect();
    let mut spec_names: Vec<&str> = options.iter().map(|o| o.name).collect();
    doc_names.sort();
    spec_names.sort();
    assert_eq!(
        doc_names, spec_names,
        "{module}{context}: documented options differ from the spec"
    );
    for o in options {
        let d = &docs[o.name];
        for (key, want) in expected(o) {
            let got = match (&d[key.as_str()], key.as_str()) {
                (Value::Null, "required") => Value::from(false),
                (other, _) => other.clone(),
            };
            assert_eq!(got, want, "{module}{context}: option {} key {key}", o.name);
        }
        let described = d["description"].as_str().is_some() || d["description"].is_sequence();
        assert!(
            described,
            "{module}{context}: {} has no description",
            o.name
        );
        if !o.suboptions.is_empty() {
            let sub = d["suboptions"].as_mapping().cloned().unwrap_or_default();
            check_options(module, &format!("{context}.{}", o.name), &sub, o.suboptions);
        }
    }
}

#[test]
fn sidecar_options_match_the_specs() {
    for spec in modules() {
        check_options(spec.name, "", &doc_options(spec.name), spec.options);
    }
}
