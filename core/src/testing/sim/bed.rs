//! A simulated host in a temp dir, with the defaults the container_unit tests share.

use super::SimHost;

/// A simulated host in a temp dir of its own, for the container_unit tests.
pub struct Bed {
    pub dir: tempfile::TempDir,
    pub sim: SimHost,
}

impl Bed {
    /// A bed holding `image` as `id`.
    pub fn new(image: &str, id: &str) -> Bed {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = SimHost::new(dir.path().join("quadlet"));
        sim.add_image(image, id);
        Bed { dir, sim }
    }

    pub fn run_unit(&self, args: serde_json::Value) -> crate::testing::Responded {
        run_container_unit(self.dir.path(), &self.sim, args)
    }

    /// The jobs queued since the last look, as `VERB SERVICE`; the other calls are dropped.
    pub fn jobs(&self) -> Vec<String> {
        let mut calls = self.sim.calls.lock().expect("calls");
        let jobs = calls
            .iter()
            .filter(|c| {
                ["start ", "restart ", "stop "]
                    .iter()
                    .any(|v| c.starts_with(v))
            })
            .cloned()
            .collect();
        calls.clear();
        jobs
    }

    /// The revision the service's running container has.
    pub fn revision(&self, service: &str) -> String {
        self.sim.running(service).expect("it runs").revision
    }
}

/// Runs container_unit on `sim` with `args`, filling in what they leave out: the dirs under
/// `root`, `pull: missing`, a 1 s `min_healthy_time` and a 30 s `timeout`.
fn run_container_unit(
    root: &std::path::Path,
    sim: &SimHost,
    args: serde_json::Value,
) -> crate::testing::Responded {
    let mut args = args;
    for (k, v) in [
        ("quadlet_dir", serde_json::json!(root.join("quadlet"))),
        ("state_dir", serde_json::json!(root.join("state"))),
        ("systemd_dir", serde_json::json!(root.join("systemd"))),
        ("pull", serde_json::json!("missing")),
        ("min_healthy_time", serde_json::json!(1000)),
        ("timeout", serde_json::json!(30)),
    ] {
        if args.get(k).is_none() {
            args[k] = v;
        }
    }
    let spec = &crate::container_unit::spec::SPEC;
    crate::testing::respond_on(spec, root, &args, sim, sim, crate::container_unit::run)
}
