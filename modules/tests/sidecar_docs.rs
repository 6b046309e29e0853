//! The sidecar docs (plugins/modules/NAME.yml) and the Rust argument specs must not drift.

use refit_core::ansible::ModuleSpec;
use serde_yaml::Value;

fn modules() -> Vec<&'static ModuleSpec> {
    vec![
        &refit_core::container_unit::spec::SPEC,
        &refit_core::stop_services::spec::SPEC,
        &refit_core::migrate::spec::SPEC,
        &refit_core::flow::spec::SPEC,
        &refit_core::datastep::spec::SPEC,
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

/// The sidecar names its module, and has EXAMPLES and RETURN beside the generated options.
#[test]
fn sidecars_name_their_module_and_have_examples_and_return() {
    for spec in modules() {
        let doc = sidecar(spec.name);
        let module = spec.name;
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

/// The sidecar's `options:` block, as the file has it: from its line to the next key of
/// DOCUMENTATION.
fn options_block(module: &str) -> String {
    let path = format!(
        "{}/../plugins/modules/{module}.yml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text
        .split_inclusive('\n')
        .skip_while(|l| *l != "  options:\n");
    let mut block: String = lines.next().unwrap_or_default().to_string();
    for l in lines {
        if !(l.starts_with("   ") || l.trim().is_empty()) {
            break;
        }
        block.push_str(l);
    }
    block
}

/// A description edited in a spec and not carried into the sidecar fails here: `make modules`
/// (which `make collection` and `make docs` run) writes them with tools/sidecar_options.py.
#[test]
fn sidecar_options_are_the_ones_the_specs_generate() {
    for spec in modules() {
        assert_eq!(
            options_block(spec.name),
            spec.doc_options(),
            "{}: the sidecar's options are not the spec's; run `make modules`, or \
             `cargo build -p refit-modules && tools/sidecar_options.py target/debug`",
            spec.name
        );
    }
}

/// One serialized result of each form a module returns, with every optional key present.
fn samples(module: &str) -> Vec<serde_json::Value> {
    use refit_core::results::stop_services::StopResult;
    use refit_core::results::{container_unit as cu, flow_state, run_migrations as rm};
    let some = || Some("x".to_string());
    let json = |v: serde_json::Result<serde_json::Value>| v.expect("serializes");
    match module {
        "container_unit" => {
            let unit = cu::UnitResult {
                container_id: some(),
                invocation_id: some(),
                instances: vec![cu::InstanceResult::default()],
                held: vec!["worker@3.service".into()],
                socket_replaced: Some(false),
                staged: true,
                network_recreated: some(),
                images_pruned: vec![cu::PrunedImage::default()],
                history: Some(vec![cu::HistoryEntry::default()]),
                image: cu::ImageResult {
                    registry_error: some(),
                    ..cu::ImageResult::default()
                },
                ..cu::UnitResult::default()
            };
            let batch = cu::BatchResult {
                units: vec![unit.clone()],
                ..cu::BatchResult::default()
            };
            vec![
                json(serde_json::to_value(&unit)),
                json(serde_json::to_value(&batch)),
            ]
        }
        "run_migrations" => {
            let taken = rm::BackupTaken {
                source: "app.service".into(),
                stream: "1".into(),
                dir: "/var/lib/refit/backups/1/x".into(),
                image: "db:1".into(),
                volumes: vec![],
                network: None,
                env: vec![],
                restore_command: vec!["restore".into()],
                created_at: "now".into(),
                duration_ms: 1,
                size_bytes: 1,
            };
            let one = rm::MigrationResult {
                unit: some(),
                stopped: vec!["app.service".into()],
                started: vec!["app.service".into()],
                installed: true,
                backup: Some(Box::new(taken.clone())),
                ..rm::MigrationResult::default()
            };
            let restore = rm::RestoreResult {
                restored: vec![taken],
                duration_ms: 1,
            };
            let batch = rm::BatchResult {
                migrations: vec![one.clone()],
                ..rm::BatchResult::default()
            };
            vec![
                json(serde_json::to_value(&one)),
                json(serde_json::to_value(&batch)),
                json(serde_json::to_value(&restore)),
            ]
        }
        "stop_services" => vec![json(serde_json::to_value(StopResult::default()))],
        "flow_state" => {
            let r = flow_state::FlowStateResult {
                plan: Some(cu::ContainerUnitResult::Batch(cu::BatchResult::default())),
                migrations: Some(vec![rm::Judgement {
                    source: "app".into(),
                    pending: true,
                    msg: "pending".into(),
                    image_id: Some("sha256:aa".into()),
                    checked: true,
                }]),
                run_id: Some("update-20261201T000000.000000".into()),
                target_written: true,
                ..flow_state::FlowStateResult::default()
            };
            vec![json(serde_json::to_value(&r))]
        }
        "data_step" => {
            use refit_core::datastep::{Place, PruneReport, Pruned, Report, StepReport};
            let place = || {
                Some(Place {
                    image: "db:17".into(),
                    volume: "db-17".into(),
                })
            };
            let step = StepReport {
                old: place(),
                new: place(),
                old_major: Some(15),
                new_major: Some(17),
                size_kb: Some(1),
                ..StepReport::default()
            };
            let pruned = Pruned {
                unit: "db.service".into(),
                removed: vec!["db-15".into()],
                kept: Vec::new(),
            };
            vec![
                json(serde_json::to_value(Report { steps: vec![step] })),
                json(serde_json::to_value(PruneReport {
                    pruned: vec![pruned],
                })),
            ]
        }
        other => panic!("no sample result for {other}"),
    }
}

/// Every key RETURN documents is in a result the module's types serialize (a key renamed or
/// dropped in core fails here), and every key a result has is documented.
#[test]
fn return_keys_match_the_serialized_results() {
    for spec in modules() {
        let doc = sidecar(spec.name);
        let ret = doc["RETURN"].as_mapping().cloned().unwrap_or_default();
        let results = samples(spec.name);
        let mut found = std::collections::BTreeSet::new();
        for (key, node) in &ret {
            let key = key.as_str().unwrap_or_default();
            let holder = results.iter().find(|r| r.get(key).is_some());
            let Some(value) = holder.and_then(|r| r.get(key)) else {
                panic!("{}: RETURN documents {key}, which no result has", spec.name);
            };
            found.insert(key.to_string());
            // One level down: a dict's keys, or a list of dicts' element keys.
            let inner = value.as_array().and_then(|l| l.first()).unwrap_or(value);
            if let Some(contains) = node["contains"].as_mapping() {
                for sub in contains.keys().filter_map(Value::as_str) {
                    assert!(
                        inner.get(sub).is_some(),
                        "{}: RETURN documents {key}.{sub}, which the result's {key} does not have",
                        spec.name
                    );
                }
            }
        }
        for r in &results {
            for key in r.as_object().into_iter().flat_map(|o| o.keys()) {
                assert!(
                    found.contains(key),
                    "{}: the result has {key}, which RETURN does not document",
                    spec.name
                );
            }
        }
    }
}
