//! What `begin` works out from the deployment when the caller leaves it out: the services to
//! check, the images an offline run needs, the pull policy and the run's name. The role passes
//! the deployment once, and so templates a handful of arguments per run instead of deriving
//! these in Jinja (each a compile on the controller, on every host of every run).

use super::{Flow, Params};

impl Params {
    /// The services whose health is checked: as given, or every unit that is not a template
    /// (an instance's health is its converge's business).
    pub fn services(&self) -> Vec<String> {
        match &self.services {
            Some(given) => given.clone(),
            None => self
                .unit_fields("name")
                .filter(|name| !name.ends_with('@'))
                .collect(),
        }
    }

    /// The images that must be local: as given, or for an offline run, every unit's image.
    pub fn images(&self) -> Vec<String> {
        match &self.images {
            Some(given) => given.clone(),
            None if self.offline => self.unit_fields("image").collect(),
            None => Vec::new(),
        }
    }

    /// How the units' images are fetched: never offline, else as given, else the flow's own.
    pub fn pull(&self) -> &str {
        match (&self.pull, self.flow) {
            _ if self.offline => "never",
            (Some(given), _) => given,
            (None, Some(Flow::Deploy)) => "missing",
            (None, _) => "always",
        }
    }

    fn unit_fields<'a>(&'a self, key: &'a str) -> impl Iterator<Item = String> + 'a {
        self.units
            .iter()
            .filter_map(move |u| u.get(key)?.as_str().map(str::to_string))
    }
}

/// A run's name when the caller gives none: the flow and the UTC time to the microsecond, as
/// the role named runs before (`update-20261205T092248.025586`).
pub fn run_id(flow: Flow) -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{}.{:06}",
        flow.as_str(),
        crate::time::civil(since.as_secs()).compact(),
        since.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::super::Params;
    use serde_json::json;

    fn params(extra: serde_json::Value) -> Params {
        let mut args = json!({
            "action": "begin", "flow": "update", "stream": "1.0", "allow_skip": false,
            "min_free_mb": 1, "lease_grace": 20, "image_store": "/s", "state_dir": "/s",
            "podman_socket": "/s", "timeout": 1, "max_parallel": 1, "min_healthy_time": 0,
            "keep_revisions": 5, "quadlet_dir": "/q", "systemd_dir": "/d", "offline": false,
            "units": [{"name": "db", "image": "r/db:1"}, {"name": "worker@", "image": "r/w:1"}],
        });
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        serde_json::from_value(args).expect("params")
    }

    #[test]
    fn services_are_the_units_that_are_not_templates_unless_given() {
        assert_eq!(params(json!({})).services(), ["db"]);
        assert_eq!(
            params(json!({"services": []})).services(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_offline_run_needs_every_units_image_and_pulls_nothing() {
        let offline = params(json!({"offline": true, "pull": "always"}));
        assert_eq!(offline.images(), ["r/db:1", "r/w:1"]);
        assert_eq!(offline.pull(), "never");
        assert_eq!(params(json!({})).images(), Vec::<String>::new());
    }

    #[test]
    fn the_pull_policy_is_the_flows_own_unless_given() {
        assert_eq!(params(json!({})).pull(), "always");
        assert_eq!(params(json!({"flow": "deploy"})).pull(), "missing");
        assert_eq!(params(json!({"pull": "missing"})).pull(), "missing");
    }

    #[test]
    fn a_run_is_named_after_its_flow_and_the_time() {
        let id = super::run_id(super::Flow::Upgrade);
        assert!(id.starts_with("upgrade-2"), "{id}");
        // upgrade-YYYYMMDDTHHMMSS.ffffff
        assert_eq!(id.len(), "upgrade-".len() + 22, "{id}");
        assert_eq!(&id[16..17], "T", "{id}");
    }
}
