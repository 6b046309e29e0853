//! The states and health statuses podman reports, read tolerantly: podman has states Docker
//! does not (`stopped`, `configured`), and new ones may come. A value refit does not know is
//! kept as `Other`, treated as not running or not healthy, and named in messages; it never
//! makes an observation fail.

use std::fmt;

/// A container's state, as podman's API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerState {
    Running,
    /// Every state but running refit has seen: created, configured, initialized, paused,
    /// restarting, stopping, stopped, exited, removing, dead.
    NotRunning(String),
    /// A state refit has never seen.
    Other(String),
}

const KNOWN_NOT_RUNNING: &[&str] = &[
    "created",
    "configured",
    "initialized",
    "paused",
    "restarting",
    "stopping",
    "stopped",
    "exited",
    "removing",
    "dead",
];

impl ContainerState {
    pub fn parse(raw: &str) -> Self {
        let s = raw.trim().to_ascii_lowercase();
        if s == "running" {
            ContainerState::Running
        } else if KNOWN_NOT_RUNNING.contains(&s.as_str()) {
            ContainerState::NotRunning(s)
        } else {
            ContainerState::Other(raw.to_string())
        }
    }

    pub fn is_running(&self) -> bool {
        *self == ContainerState::Running
    }
}

impl fmt::Display for ContainerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContainerState::Running => f.write_str("running"),
            ContainerState::NotRunning(s) => f.write_str(s),
            ContainerState::Other(s) => write!(f, "{s:?} (a state refit does not know)"),
        }
    }
}

/// A running container's health check status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy,
    Unhealthy,
    Starting,
    /// A status refit has never seen: not healthy, and not known to be failing.
    Other(String),
}

impl Health {
    /// None where the container has no health check (podman says "" or "none").
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "none" => None,
            "healthy" => Some(Health::Healthy),
            "unhealthy" => Some(Health::Unhealthy),
            "starting" => Some(Health::Starting),
            _ => Some(Health::Other(raw.to_string())),
        }
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Health::Healthy => f.write_str("healthy"),
            Health::Unhealthy => f.write_str("unhealthy"),
            Health::Starting => f.write_str("starting"),
            Health::Other(s) => write!(f, "{s:?} (a health status refit does not know)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_podman_state_parses_and_only_running_runs() {
        for s in KNOWN_NOT_RUNNING {
            let st = ContainerState::parse(s);
            assert_eq!(st, ContainerState::NotRunning(s.to_string()));
            assert!(!st.is_running());
        }
        assert!(ContainerState::parse("running").is_running());
        assert!(ContainerState::parse("Running").is_running());
    }

    #[test]
    fn an_unknown_state_is_other_and_named() {
        let st = ContainerState::parse("hibernating");
        assert_eq!(st, ContainerState::Other("hibernating".into()));
        assert!(!st.is_running());
        assert!(st.to_string().contains("\"hibernating\""));
    }

    #[test]
    fn health_statuses_parse_and_an_unknown_one_is_other() {
        assert_eq!(Health::parse(""), None);
        assert_eq!(Health::parse("none"), None);
        assert_eq!(Health::parse("healthy"), Some(Health::Healthy));
        assert_eq!(Health::parse("unhealthy"), Some(Health::Unhealthy));
        assert_eq!(Health::parse("starting"), Some(Health::Starting));
        let odd = Health::parse("degraded");
        assert_eq!(odd, Some(Health::Other("degraded".into())));
        assert!(odd.expect("other").to_string().contains("\"degraded\""));
    }
}
