//! What a podman call can fail with: the call (or the socket, or the pull) it was, and beneath
//! it what went wrong, kept as its source.

#[derive(Debug, thiserror::Error)]
pub enum PodmanError {
    #[error(
        "the podman API at {socket} is unreachable: {source}; start it with `systemctl enable --now podman.socket`, or set podman_socket"
    )]
    Unreachable {
        socket: String,
        #[source]
        source: CallError,
    },
    #[error(
        "pulling {image} failed: {source}; check the registry is reachable and the reference is right, or use pull: never with a local image"
    )]
    Pull {
        image: String,
        #[source]
        source: CallError,
    },
    #[error("podman API call `{call}` failed: {source}")]
    Api {
        call: String,
        #[source]
        source: CallError,
    },
}

/// What went wrong beneath a podman call: the socket, the client library, an answer refit
/// cannot read, or podman's own refusal, quoted as podman worded it.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Boxed: bollard's error is large, and every podman error carries this one.
    #[error(transparent)]
    Client(Box<bollard::errors::Error>),
    #[error("podman's answer does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// serde's message could quote the body, which holds the secret's value.
    #[error("podman's answer does not parse as a secret")]
    NotASecret,
    /// A status the call does not take, with podman's answer: its own words.
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    /// podman's own error text, from a progress stream or an answer's message.
    #[error("{0}")]
    Said(String),
    /// An answer that is not whole HTTP/1.1: what of it is missing.
    #[error("{0}")]
    Torn(String),
    #[error("no complete answer within {0} s")]
    Slow(u64),
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the pull reported success but named no image")]
    NoImageId,
    /// A pull cut off at its bound: the registry had not sent the whole image by then.
    #[error(
        "{source}; the registry did not finish sending it within {secs} s (the unit's timeout)"
    )]
    Unfinished {
        secs: u64,
        #[source]
        source: Box<CallError>,
    },
}

impl From<bollard::errors::Error> for CallError {
    fn from(e: bollard::errors::Error) -> Self {
        CallError::Client(Box::new(e))
    }
}

impl CallError {
    /// A status the call does not take, with the body podman sent beside it.
    pub fn status(status: u16, body: &[u8]) -> Self {
        CallError::Status {
            status,
            body: String::from_utf8_lossy(body).trim().to_string(),
        }
    }
}
