//! A pull through libpod's own endpoint. The Docker-compatible one resolves a short name to
//! Docker Hub (containers.conf `compat_api_enforce_docker_hub`), past the host's
//! `registries.conf` aliases; libpod's honours aliases, search registries and mirrors, as
//! `podman pull` does. It also takes a map of logins in `X-Registry-Auth`, used for every
//! registry of the pull, mirrors included, and answers with the pulled image's ID.

use super::{PodmanError, wire};
use std::time::Duration;

/// Pulls `image`, with the `X-Registry-Auth` value `auth` when given, bounded by `timeout`
/// as a whole; the pulled image's ID.
pub fn pull(
    socket: &str,
    image: &str,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<String, PodmanError> {
    let _step = crate::progress::step(format!("pulling {image}"), None);
    let pull_err = |detail: String| PodmanError::Pull {
        image: image.to_string(),
        detail,
    };
    let path = format!(
        "/v4.0.0/libpod/images/pull?reference={}&policy=always",
        wire::encode(image)
    );
    let req = wire::Request {
        registry_auth: auth,
        ..wire::Request::new("image pull", "POST", &path, timeout)
    };
    let wire::Response { status, body } = wire::send(socket, &req).map_err(|e| match e {
        PodmanError::Api { detail, .. } => pull_err(format!(
            "{detail}; the registry did not finish sending it within {} s (the \
                     unit's timeout)",
            timeout.as_secs()
        )),
        other => other,
    })?;
    let answer = Answer::read(&body);
    if let Some(e) = answer.error {
        return Err(pull_err(e));
    }
    if !(200..300).contains(&status) {
        return Err(pull_err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body).trim()
        )));
    }
    answer
        .id
        .ok_or_else(|| pull_err("the pull reported success but named no image".into()))
}

/// What a pull's progress stream says in the end.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    /// The first `error` (or `message`, of an answer that failed at once).
    error: Option<String>,
    /// The `id` of the pulled image.
    id: Option<String>,
}

impl Answer {
    fn read(body: &[u8]) -> Self {
        let mut answer = Answer::default();
        let values = serde_json::Deserializer::from_slice(body)
            .into_iter::<serde_json::Value>()
            .map_while(Result::ok);
        for v in values {
            if let Some(status) = v.get("stream").and_then(|s| s.as_str()) {
                tracing::info!(status = status.trim(), "pull");
            }
            let error = v
                .get("error")
                .or_else(|| v.pointer("/errorDetail/message"))
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str());
            if answer.error.is_none() {
                answer.error = error.map(str::to_string);
            }
            if let Some(id) = v.get("id").and_then(|i| i.as_str()) {
                answer.id = Some(id.to_string());
            }
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_answers_with_its_image_id() {
        let body = br#"{"stream":"Trying to pull 127.0.0.1:5001/svc:1.0...\n"}
{"stream":"Writing manifest to image destination\n"}
{"images":["4d3c"],"id":"4d3c"}
"#;
        assert_eq!(
            Answer::read(body),
            Answer {
                error: None,
                id: Some("4d3c".into())
            }
        );
    }

    #[test]
    fn finds_the_error_in_a_progress_stream() {
        let body = br#"{"stream":"Trying to pull 127.0.0.1:5001/svc:1.0...\n"}
{"error":"initializing source docker://127.0.0.1:5001/svc:1.0: authentication required"}
"#;
        assert_eq!(
            Answer::read(body).error.as_deref(),
            Some("initializing source docker://127.0.0.1:5001/svc:1.0: authentication required")
        );
        assert_eq!(
            Answer::read(br#"{"cause":"x","message":"no such image","response":500}"#)
                .error
                .as_deref(),
            Some("no such image")
        );
        assert_eq!(Answer::read(br#"{"stream":"Copying blob"}"#).error, None);
    }
}
