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

fn sidecar(module: &str) -> Value {
    let path = format!(
        "{}/../plugins/modules/{module}.yml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn doc_options(module: &str) -> serde_yaml::Mapping {
    let doc = sidecar(module);
    assert_eq!(
        doc["DOCUMENTATION"]["module"].as_str(),
        Some(module),
        "{module}: module name"
    );
    assert!(
        doc["EXAMPLES"].as_str().is_some_and(|e| !e.is_empty()),
        "{module}: EXAMPLES"
    );
    assert!(doc["RETURN"].is_mapping(), "{module}: RETURN");
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

/// What a module needs on the host, as `ansible-doc` and the docsite show it.
#[test]
fn sidecars_state_their_requirements() {
    for spec in modules() {
        let doc = sidecar(spec.name);
        let requirements = doc["DOCUMENTATION"]["requirements"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        assert!(
            !requirements.is_empty(),
            "{}: DOCUMENTATION has no requirements",
            spec.name
        );
        let text = serde_yaml::to_string(&requirements).expect("yaml");
        for needed in ["systemd", "glibc 2.28"] {
            assert!(
                text.contains(needed),
                "{}: requirements do not name {needed}",
                spec.name
            );
        }
        if spec.options.iter().any(|o| o.name == "podman_socket") {
            assert!(
                text.contains("podman API socket"),
                "{}: requirements do not name the podman API socket",
                spec.name
            );
        }
    }
}

/// The result keys the roles (roles/flow/tasks) and refitctl (refitctl/src/report.rs) read,
/// and `held`, which says what a canary run left behind.
const READ_KEYS: &[(&str, &[&str])] = &[
    (
        "container_unit",
        &[
            "units",
            "restarted_services",
            "instances.service",
            "instances.active",
            "instances.replaced",
            "held",
            "restart_needed",
            "start_needed",
            "active",
            "actions",
            "reasons",
            "service",
            "image.newer_available",
        ],
    ),
    ("run_migrations", &["migrations", "ran", "skipped_reason"]),
];

#[test]
fn sidecars_document_the_result_keys_that_are_read() {
    for (module, keys) in READ_KEYS {
        let doc = sidecar(module);
        for key in *keys {
            let mut node = &doc["RETURN"];
            for (i, part) in key.split('.').enumerate() {
                node = if i == 0 {
                    &node[part]
                } else {
                    &node["contains"][part]
                };
            }
            assert!(
                node["description"].as_str().is_some() || node["description"].is_sequence(),
                "{module}: RETURN does not document {key}"
            );
        }
    }
}
