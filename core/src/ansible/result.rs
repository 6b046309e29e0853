//! What a module returns: the one JSON object Ansible reads from stdout.

use serde::Serialize;
use serde_json::{Map, Value};

/// The `diff` key: before and after text with headers, as Ansible's diff callback shows them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diff {
    pub before: String,
    pub after: String,
    pub before_header: String,
    pub after_header: String,
}

/// A module's outcome, success or failure, with its documented return values in `data`.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub changed: bool,
    pub failed: bool,
    pub msg: String,
    pub data: Map<String, Value>,
    pub diff: Vec<Diff>,
    pub warnings: Vec<String>,
    /// Secrets the module found beyond its parameters (a value a unit held before, known to
    /// refit only by its hash): masked in the result like the `no_log` parameters.
    pub mask_also: Vec<String>,
}

impl Outcome {
    pub fn new(changed: bool, msg: impl Into<String>) -> Self {
        Outcome {
            changed,
            msg: msg.into(),
            ..Outcome::default()
        }
    }

    /// Adds the fields of a serializable return-value struct to `data`.
    pub fn with_data(mut self, data: impl Serialize) -> Self {
        if let Ok(Value::Object(m)) = serde_json::to_value(data) {
            self.data.extend(m);
        }
        self
    }

    pub fn failed(mut self, msg: impl Into<String>) -> Self {
        self.failed = true;
        self.msg = msg.into();
        self
    }

    /// Renders the result object. `diff` is included only when Ansible asked for it.
    pub fn into_json(self, with_diff: bool, module_args: Map<String, Value>) -> Value {
        let mut out = Map::new();
        out.insert("changed".into(), Value::Bool(self.changed));
        out.insert("failed".into(), Value::Bool(self.failed));
        out.insert("msg".into(), Value::String(self.msg));
        out.extend(self.data);
        if with_diff && !self.diff.is_empty() {
            let diff = if self.diff.len() == 1 {
                serde_json::to_value(&self.diff[0])
            } else {
                serde_json::to_value(&self.diff)
            };
            out.insert("diff".into(), diff.unwrap_or(Value::Null));
        }
        if !self.warnings.is_empty() {
            out.insert("warnings".into(), Value::from(self.warnings));
        }
        let mut invocation = Map::new();
        invocation.insert("module_args".into(), Value::Object(module_args));
        out.insert("invocation".into(), Value::Object(invocation));
        Value::Object(out)
    }
}

/// The failure object for errors that happen before a module runs (bad args file, panic).
pub fn failure_json(msg: &str) -> Value {
    serde_json::json!({"failed": true, "changed": false, "msg": msg})
}
