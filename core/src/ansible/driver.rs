//! The protocol every module binary goes through (entry.rs calls it): read the args file,
//! validate, run, and make the one result object.
//!
//! It guarantees Ansible's contract: exactly one JSON object on stdout, logs on stderr, and a
//! `{"failed": true}` object even when the module errs or panics.

use super::mask::{mask, masked_args, secrets, with_escaped_forms};
use super::result::{Outcome, failure_json};
use super::spec::ModuleSpec;
use super::validate::validate;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// What a module knows about its invocation besides its own parameters.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub check_mode: bool,
    pub diff: bool,
    pub verbosity: u8,
    pub no_log: bool,
    pub tmpdir: Option<PathBuf>,
    /// The name the controller's action asks this binary to keep a copy of itself under
    /// (`_refit_keep_as`; ansible/keep.rs).
    pub keep_as: Option<String>,
    /// The controller's action follows the call's progress (`_refit_progress`): a call that
    /// lasts may detach (ansible/detach.rs).
    pub progress: bool,
    /// Whose services the call manages (`scope`, `scope_user`), resolved once by the driver.
    pub scope: crate::scope::Scope,
}

/// Set to any value, the driver panics inside the module body. It exists to prove, in tests,
/// that a panic still yields `{"failed": true}`.
pub const FORCE_PANIC_ENV: &str = "REFIT_FORCE_PANIC";

#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("cannot read the args file {path}: {source}; Ansible passes it as the only argument")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the args file {path} is not valid JSON: {source}; it must be one JSON object of parameters"
    )]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the args file {0} holds JSON that is not an object; it must be one JSON object of parameters"
    )]
    NotObject(PathBuf),
}

/// The args, from a file or, for the path `-`, standard input, where refit's own action sends
/// them (one round trip).
pub fn read_text(path: &Path) -> Result<String, ArgsError> {
    let read = |source| ArgsError::Read {
        path: path.to_path_buf(),
        source,
    };
    if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).map_err(read)
    } else {
        std::fs::read_to_string(path).map_err(read)
    }
}

/// What an args file holds.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// The user's parameters.
    pub params: Map<String, Value>,
    pub inv: Invocation,
    /// Ansible asked to drop the options this module does not know.
    pub ignore_unknown: bool,
}

/// Splits an args file into the user's parameters and the invocation's internal keys.
pub fn read_args(path: &Path) -> Result<Args, ArgsError> {
    parse_args(&read_text(path)?, path)
}

/// Splits the text of an args file (read from `path`) as `read_args` does.
pub fn parse_args(text: &str, path: &Path) -> Result<Args, ArgsError> {
    let value: Value = serde_json::from_str(text).map_err(|source| ArgsError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let Value::Object(all) = value else {
        return Err(ArgsError::NotObject(path.to_path_buf()));
    };
    let mut params = Map::new();
    let mut inv = Invocation::default();
    let mut ignore_unknown = false;
    let flag = |v: &Value| super::validate::coerce_bool(v).unwrap_or(false);
    for (k, v) in all {
        match k.as_str() {
            "_ansible_check_mode" => inv.check_mode = flag(&v),
            "_ansible_diff" => inv.diff = flag(&v),
            "_ansible_no_log" => inv.no_log = flag(&v),
            "_ansible_verbosity" => inv.verbosity = v.as_u64().unwrap_or(0).min(9) as u8,
            "_ansible_tmpdir" => inv.tmpdir = v.as_str().map(PathBuf::from),
            "_ansible_ignore_unknown_opts" => ignore_unknown = flag(&v),
            "_refit_keep_as" => inv.keep_as = v.as_str().map(str::to_string),
            "_refit_progress" => inv.progress = flag(&v),
            // Other internal keys come and go with ansible-core versions.
            _ if k.starts_with("_ansible_") => {}
            _ => {
                params.insert(k, v);
            }
        }
    }
    Ok(Args {
        params,
        inv,
        ignore_unknown,
    })
}

/// Everything `run` does but printing: args file in, result object out.
pub fn respond<P, E, F>(spec: &ModuleSpec, path: &Path, body: F) -> Value
where
    P: DeserializeOwned,
    E: std::fmt::Display,
    F: FnOnce(P, &Invocation) -> Result<Outcome, E>,
{
    match read_text(path) {
        Ok(text) => answer(spec, path, &text, body),
        Err(e) => failure_json(&e.to_string()),
    }
}

/// `respond` for args already read (from `path`).
pub fn answer<P, E, F>(spec: &ModuleSpec, path: &Path, text: &str, body: F) -> Value
where
    P: DeserializeOwned,
    E: std::fmt::Display,
    F: FnOnce(P, &Invocation) -> Result<Outcome, E>,
{
    let Args {
        params: mut raw,
        inv,
        ignore_unknown,
    } = match parse_args(text, path) {
        Ok(x) => x,
        Err(e) => return failure_json(&e.to_string()),
    };
    crate::logging::init(inv.verbosity);
    if ignore_unknown {
        raw.retain(|k, _| spec.option(k).is_some());
    }
    crate::scope::Scope::drop_empty_places(&mut raw);
    let mut params = match validate(spec, &raw) {
        Ok(p) => p,
        Err(e) => {
            // The parameters did not validate, so mask whatever their no_log keys hold.
            let mut json = failure_json(&e.to_string());
            mask(&mut json, &with_escaped_forms(secrets(spec.options, &raw)));
            return json;
        }
    };
    let mut inv = inv;
    match enter_scope(spec, &raw, &mut params, &inv) {
        Ok(scope) => inv.scope = scope,
        Err(e) => return failure_json(&e.to_string()),
    }
    let mut secrets = secrets(spec.options, &params);
    if let Some(r) = crate::progress::recorder().as_mut() {
        r.mask_with(with_escaped_forms(secrets.clone()));
    }
    let module_args = masked_args(spec.options, &params);
    let typed: P = match serde_json::from_value(Value::Object(params)) {
        Ok(p) => p,
        Err(e) => {
            return failure_json(&format!("{}: parameters could not be read: {e}", spec.name));
        }
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if std::env::var_os(FORCE_PANIC_ENV).is_some() {
            panic!("{FORCE_PANIC_ENV} is set");
        }
        body(typed, &inv)
    }));
    let mut json = match outcome {
        Ok(Ok(mut o)) => {
            secrets.append(&mut o.mask_also);
            o.into_json(inv.diff, module_args)
        }
        Ok(Err(e)) => Outcome::default()
            .failed(e.to_string())
            .into_json(false, module_args),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            failure_json(&format!(
                "{} hit an internal error: {what}. This is a bug in refit; please report it with this message",
                spec.name
            ))
        }
    };
    mask(&mut json, &with_escaped_forms(secrets));
    // Not in check mode, and not for a call that failed (bad input touches nothing on the host).
    // A call that became its scope's user kept its copy before (enter_scope).
    let kept = !inv.check_mode && json.get("failed") == Some(&Value::Bool(false));
    if kept && !inv.scope.switches_user() {
        keep(spec, &inv);
    }
    json
}

/// The call's scope: its places filled into `params` where the caller gave none, its
/// preflight passed, the process become its user when root acts for one, and a user's podman
/// socket started when it is missing. The copy of
/// this binary is kept first, while the process is still the one the controller runs it as.
fn enter_scope(
    spec: &ModuleSpec,
    raw: &Map<String, Value>,
    params: &mut Map<String, Value>,
    inv: &Invocation,
) -> Result<crate::scope::Scope, crate::scope::ScopeError> {
    if spec.option("scope").is_none() {
        return Ok(crate::scope::Scope::System);
    }
    let scope = crate::scope::Scope::of_params(params)?;
    scope.fill_places(raw, params);
    scope.preflight()?;
    if scope.switches_user() {
        if !inv.check_mode {
            keep(spec, inv);
        }
        scope.enter()?;
    }
    let socket = params.get("podman_socket").and_then(Value::as_str);
    if let Some(socket) = socket.filter(|_| !inv.check_mode) {
        scope.start_podman_socket(Path::new(socket))?;
    }
    Ok(scope)
}

/// Keeps a copy of this binary when the controller's action asked. Best effort: a host that
/// cannot keep one runs every call the usual way.
fn keep(spec: &ModuleSpec, inv: &Invocation) {
    let Some(name) = inv.keep_as.as_deref() else {
        return;
    };
    match super::keep::keep_self(spec.name, name, Path::new(super::keep::KEEP_DIR)) {
        Ok(kept) => tracing::debug!(kept, "{name} kept in {}", super::keep::KEEP_DIR),
        Err(e) => tracing::debug!("{e}"),
    }
}
