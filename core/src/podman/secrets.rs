//! podman secrets through the libpod API: create, list, reveal and remove.
//!
//! bollard speaks only Docker's swarm secrets, and a one-off container needs a secret's value,
//! which only libpod's `showsecret` gives; so these calls go through `wire`, plain HTTP/1.1
//! over the socket.
//! A secret's value travels only in a request or response body: never in a path, a query or
//! an error message.

use super::PodmanError;
use super::wire::{Request, Response, encode};
use std::time::Duration;

/// The label on every secret refit creates: the unit file it belongs to, so refit removes
/// only its own secrets, and only a unit's own.
pub const SECRET_UNIT_LABEL: &str = "io.refit.unit";

/// The label on the copies refit keeps of another tool's secrets (`kept_inputs`): the unit
/// file whose input it was. A label of its own, so the prune of `secret_env`'s secrets, which
/// goes by `SECRET_UNIT_LABEL`, never takes them.
pub const KEPT_UNIT_LABEL: &str = "io.refit.kept-for";

/// Seconds a secret call may take; they are small requests to a local daemon.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A secret as listed: its name, for refit's own the unit it belongs to, and when its value
/// was last set (seconds since the epoch): a secret another tool replaced has a later time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub name: String,
    pub unit: Option<String>,
    pub updated_at: Option<i64>,
}

/// Creates secret `name` holding `value`, labelled `label=unit` (`SECRET_UNIT_LABEL` for
/// `secret_env`'s, `KEPT_UNIT_LABEL` for a kept copy). One that exists is left as it is: refit
/// names a secret after its content, so an existing name already holds it.
pub fn create(
    socket: &str,
    name: &str,
    label: &str,
    unit: &str,
    value: &str,
) -> Result<(), PodmanError> {
    let labels = serde_json::json!({ label: unit }).to_string();
    post_create(
        socket,
        name,
        &format!("labels={}", encode(&labels)),
        value,
        true,
    )
}

/// Sets the value of secret `name`, which exists or not, with podman's `replace` (libpod API
/// 4.7 and later): a rollback puts another tool's secret back as it ran.
pub fn replace(socket: &str, name: &str, value: &str) -> Result<(), PodmanError> {
    post_create(socket, name, "replace=true", value, false)
}

/// `exists_ok`: a 409 (the name is taken) is success, for a name that says its content.
fn post_create(
    socket: &str,
    name: &str,
    query: &str,
    value: &str,
    exists_ok: bool,
) -> Result<(), PodmanError> {
    let path = format!(
        "/v4.0.0/libpod/secrets/create?name={}&{query}",
        encode(name)
    );
    let Response { status, body } = request(socket, "POST", &path, value.as_bytes())?;
    match status {
        200..=299 => Ok(()),
        409 if exists_ok => Ok(()),
        _ => Err(failed("secret create", name, status, &body)),
    }
}

/// Every secret podman holds.
pub fn list(socket: &str) -> Result<Vec<SecretInfo>, PodmanError> {
    #[derive(serde::Deserialize)]
    struct Listed {
        #[serde(rename = "Spec")]
        spec: Spec,
        #[serde(rename = "UpdatedAt", default)]
        updated_at: String,
    }
    #[derive(serde::Deserialize)]
    struct Spec {
        #[serde(rename = "Name")]
        name: String,
        #[serde(rename = "Labels", default)]
        labels: Option<std::collections::HashMap<String, String>>,
    }
    let Response { status, body } = request(socket, "GET", "/v4.0.0/libpod/secrets/json", b"")?;
    if !(200..=299).contains(&status) {
        return Err(failed("secret list", "", status, &body));
    }
    let listed: Vec<Listed> = serde_json::from_slice(&body).map_err(|e| PodmanError::Api {
        call: "secret list".into(),
        detail: format!("podman's answer does not parse: {e}"),
    })?;
    Ok(listed
        .into_iter()
        .map(|l| SecretInfo {
            unit: l.spec.labels.and_then(|mut m| m.remove(SECRET_UNIT_LABEL)),
            name: l.spec.name,
            updated_at: crate::time::parse_rfc3339(&l.updated_at),
        })
        .collect())
}

/// The value secret `name` holds, or None when there is no such secret.
pub fn reveal(socket: &str, name: &str) -> Result<Option<String>, PodmanError> {
    #[derive(serde::Deserialize)]
    struct Shown {
        #[serde(rename = "SecretData", default)]
        data: String,
    }
    let path = format!(
        "/v4.0.0/libpod/secrets/{}/json?showsecret=true",
        encode(name)
    );
    let Response { status, body } = request(socket, "GET", &path, b"")?;
    match status {
        200..=299 => serde_json::from_slice::<Shown>(&body)
            .map(|s| Some(s.data))
            // serde's message could quote the body, which holds the value.
            .map_err(|_| PodmanError::Api {
                call: format!("secret inspect {name}"),
                detail: "podman's answer does not parse as a secret".into(),
            }),
        404 => Ok(None),
        _ => Err(failed("secret inspect", name, status, &body)),
    }
}

/// Removes secret `name`; one that is gone already is not an error.
pub fn remove(socket: &str, name: &str) -> Result<(), PodmanError> {
    let path = format!("/v4.0.0/libpod/secrets/{}", encode(name));
    let Response { status, body } = request(socket, "DELETE", &path, b"")?;
    match status {
        200..=299 | 404 => Ok(()),
        _ => Err(failed("secret remove", name, status, &body)),
    }
}

fn failed(call: &str, name: &str, status: u16, body: &[u8]) -> PodmanError {
    super::wire::refused(format!("{call} {name}").trim_end(), status, body)
}

/// One request to the libpod API, bounded by `TIMEOUT`.
fn request(socket: &str, method: &str, path: &str, body: &[u8]) -> Result<Response, PodmanError> {
    let call = format!("{method} {}", path.split('?').next().unwrap_or(path));
    let req = Request {
        body,
        ..Request::new(&call, method, path, TIMEOUT)
    };
    super::wire::send(socket, &req)
}
