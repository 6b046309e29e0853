//! A pull that carries registry logins. bollard sends one login for one registry; podman also
//! takes a map of logins in `X-Registry-Auth`, which it uses for every registry of the pull,
//! `registries.conf` mirrors included. So a pull with an explicit `auth_file` goes over the
//! socket here, with that map.

use super::{PodmanError, wire};
use std::time::Duration;

/// Pulls `image` with the `X-Registry-Auth` value `auth`, bounded by `timeout` as a whole.
pub fn pull(socket: &str, image: &str, auth: &str, timeout: Duration) -> Result<(), PodmanError> {
    let pull_err = |detail: String| PodmanError::Pull {
        image: image.to_string(),
        detail,
    };
    let path = format!("/v1.41/images/create?fromImage={}", wire::encode(image));
    let (status, body) = wire::request_with_headers(
        socket,
        "image pull",
        "POST",
        &path,
        &[("X-Registry-Auth", auth)],
        b"",
        timeout,
    )?;
    if let Some(e) = first_error(&body) {
        return Err(pull_err(e));
    }
    if !(200..300).contains(&status) {
        return Err(pull_err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body).trim()
        )));
    }
    Ok(())
}

/// The first error in a pull's answer: its progress stream's `errorDetail` or `error`, or the
/// `message` of an answer that failed at once.
fn first_error(body: &[u8]) -> Option<String> {
    serde_json::Deserializer::from_slice(body)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .find_map(|v| {
            v.pointer("/errorDetail/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_error_in_a_progress_stream() {
        let body = br#"{"status":"Trying to pull 127.0.0.1:5001/svc:1.0..."}
{"progressDetail":{}}
{"error":"short","errorDetail":{"message":"reading manifest 1.0 in 127.0.0.1:5001/svc: authentication required"}}
"#;
        assert_eq!(
            first_error(body).as_deref(),
            Some("reading manifest 1.0 in 127.0.0.1:5001/svc: authentication required")
        );
        assert_eq!(
            first_error(br#"{"message":"no such image"}"#).as_deref(),
            Some("no such image")
        );
        assert_eq!(
            first_error(br#"{"status":"Download complete","id":"abc"}"#),
            None
        );
    }
}
