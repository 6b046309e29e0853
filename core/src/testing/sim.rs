//! A simulated host for unit tests: systemd jobs change what `show` and the container list
//! report, the way quadlet and podman would. A started service runs the revision and image its
//! unit file on disk names; a revision marked crashing exits at once and systemd schedules a
//! restart, its container caught in podman's `stopped` state, as on a real host. Faults are
//! injected by name: a crashing revision, an image that is gone, a container state or health
//! status refit has never seen. Time is a `FakeClock`, so waits take no real time.

use crate::podman::{
    ContainerInfo, ContainerState, Ended, Health, OneOff, Podman, PodmanError, Prepared,
    UnitSelection,
};
use crate::systemd::{Job, Systemd, SystemdError, UnitStatus};
use crate::unit::{REVISION_LABEL, UnitFile};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod bed;
mod images;
mod plain;
mod resources;
use plain::{no_oneoffs, now_secs};
mod inputs;
pub mod meet;
pub use bed::Bed;
pub use images::IMAGE_BYTES;

#[derive(Debug, Clone, Default)]
struct Service {
    active: &'static str,
    sub: &'static str,
    invocation: u64,
    restarts: u64,
    container: Option<ContainerInfo>,
}

type CrashWhile = Box<dyn Fn(&SimHost) -> bool + Send>;

#[derive(Default)]
pub struct SimHost {
    pub quadlet_dir: PathBuf,
    /// Local images: reference or ID to image ID.
    images: Mutex<HashMap<String, String>>,
    /// What a pull of a reference brings.
    pub registry: HashMap<String, String>,
    /// Revisions and image IDs whose containers exit at once.
    crashing: Mutex<HashSet<String>>,
    /// A state a running container reports instead of `running` (a state refit never saw).
    pub odd_state: Option<String>,
    /// A health status every container reports.
    pub health: Option<String>,
    /// Services whose start fails because the named unit they require has failed.
    pub failed_dependency: HashMap<String, String>,
    /// Properties a unit reports besides its state: its dependencies (`RequiredBy`, `After`,
    /// ...), as `systemctl show` gives them.
    pub props: HashMap<String, Vec<(&'static str, String)>>,
    /// The networks podman has.
    pub networks: Vec<String>,
    /// Units whose stop never ends: they stay deactivating.
    pub stuck: HashSet<String>,
    /// podman secrets another tool made: refit's own are not kept.
    pub foreign_secrets: Mutex<Vec<crate::podman::SecretInfo>>,
    /// The values of secrets, by name: another tool's, and the copies refit keeps of them.
    pub secret_values: Mutex<HashMap<String, String>>,
    /// Tests of what the host holds (a file's content, a secret's value): a container started
    /// while one says yes exits at once, as a service given a bad config does.
    crash_while: Mutex<Vec<CrashWhile>>,
    /// Image IDs containers other than the units' use (a `podman run` by hand).
    pub foreign_users: HashSet<String>,
    /// Crashed services systemd restarts on its own (`Restart=on-failure`), with how many more
    /// looks find the restart still scheduled; the look after them finds the start under way.
    restarting_on_their_own: Mutex<HashMap<String, u32>>,
    services: Mutex<HashMap<String, Service>>,
    next: Mutex<u64>,
    /// Every call that changes something, in order; a `FakePodman` may share it.
    pub calls: Arc<Mutex<Vec<String>>>,
    /// How many `show` calls systemd was asked.
    pub looks: std::sync::atomic::AtomicUsize,
    /// Where stop jobs wait for each other, when a test sets it.
    pub stops_meet: meet::Meet,
}

/// What a service's running container runs: its revision and image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub revision: String,
    pub image_id: String,
}

impl SimHost {
    pub fn new(quadlet_dir: PathBuf) -> Self {
        SimHost {
            quadlet_dir,
            ..SimHost::default()
        }
    }

    /// `needed` and `dependent`, which requires it and starts after it, both running on the
    /// image `svc:1` (ID `img-1`): container units in `quadlet_dir`.
    pub fn with_dependency(quadlet_dir: PathBuf, needed: &str, dependent: &str) -> Self {
        std::fs::create_dir_all(&quadlet_dir).expect("mkdir");
        for name in [needed, dependent] {
            let unit = quadlet_dir.join(format!("{name}.container"));
            std::fs::write(unit, "[Container]\nImage=svc:1\n").expect("write unit");
        }
        let (needed, dependent) = (format!("{needed}.service"), format!("{dependent}.service"));
        let mut sim = SimHost::new(quadlet_dir);
        sim.add_image("svc:1", "img-1");
        sim.props
            .insert(needed.clone(), vec![("RequiredBy", dependent.clone())]);
        sim.props.insert(
            dependent.clone(),
            vec![("Requires", needed.clone()), ("After", needed.clone())],
        );
        sim.enqueue(Job::Start, &[needed, dependent])
            .expect("start");
        sim.calls.lock().expect("calls").clear();
        sim
    }

    pub fn add_image(&self, reference: &str, id: &str) {
        let mut images = self.images.lock().expect("images");
        images.insert(reference.to_string(), id.to_string());
        images.insert(id.to_string(), id.to_string());
    }

    /// From now on, a container of `revision`, or of the image with this ID, exits as soon as
    /// it starts.
    pub fn crash(&self, revision: &str) {
        self.crashing
            .lock()
            .expect("crashing")
            .insert(revision.to_string());
    }

    pub fn remove_image(&self, id: &str) {
        self.images.lock().expect("images").retain(|_, v| v != id);
    }

    /// The revision and image the service's running container has, if it runs.
    pub fn running(&self, service: &str) -> Option<Running> {
        let services = self.services.lock().expect("services");
        let c = services.get(service)?.container.as_ref()?;
        c.running().then(|| Running {
            revision: c.revision.clone().unwrap_or_default(),
            image_id: c.image_id.clone(),
        })
    }

    pub fn active_state(&self, service: &str) -> String {
        let services = self.services.lock().expect("services");
        services
            .get(service)
            .map_or("inactive", |s| s.active)
            .to_string()
    }

    /// The container of `service` exits, as when its database went away under it: systemd
    /// schedules a restart, which `looks` more looks still find scheduled, and the next finds
    /// under way (a new invocation, still activating). Noted as `own-restart SERVICE`.
    pub fn crash_then_restart_on_its_own(&self, service: &str, looks: u32) {
        let mut services = self.services.lock().expect("services");
        let s = services.entry(service.to_string()).or_default();
        (s.active, s.sub) = ("activating", "auto-restart");
        if let Some(c) = s.container.as_mut() {
            c.state = ContainerState::parse("stopped");
        }
        self.restarting_on_their_own
            .lock()
            .expect("restarting")
            .insert(service.to_string(), looks);
    }

    /// What time does to the units between two looks: a start under way ends, and a restart
    /// systemd scheduled on its own begins.
    fn pass_time(&self, units: &[String]) {
        for u in units {
            {
                let mut services = self.services.lock().expect("services");
                if let Some(s) = services
                    .get_mut(u)
                    .filter(|s| s.active == "activating" && s.sub == "start")
                {
                    (s.active, s.sub) = ("active", "running");
                }
            }
            let begins = {
                let mut restarting = self.restarting_on_their_own.lock().expect("restarting");
                match restarting.get_mut(u) {
                    Some(0) => restarting.remove(u).is_some(),
                    Some(n) => {
                        *n -= 1;
                        false
                    }
                    None => false,
                }
            };
            if begins {
                self.note(format!("own-restart {u}"));
                self.start(u);
                let mut services = self.services.lock().expect("services");
                if let Some(s) = services.get_mut(u).filter(|s| s.active == "active") {
                    (s.active, s.sub) = ("activating", "start");
                }
            }
        }
    }

    fn note(&self, call: String) {
        self.calls.lock().expect("calls").push(call);
    }

    /// What a start of `service` does: runs the revision and image its unit file names.
    fn start(&self, service: &str) {
        if self.failed_dependency.contains_key(service) {
            let mut services = self.services.lock().expect("services");
            let s = services.entry(service.to_string()).or_default();
            s.active = "inactive";
            s.sub = "dead";
            s.container = None;
            return;
        }
        if resources::start_resource(self, service) {
            return;
        }
        let stem = service.trim_end_matches(".service");
        // An instance runs its own file when it has one (an instance file, or a link to the
        // template), else its template's, as quadlet generates them.
        let own = format!("{stem}.container");
        let file = match stem.split_once('@') {
            Some((template, _)) if !self.quadlet_dir.join(&own).exists() => {
                format!("{template}@.container")
            }
            _ => own,
        };
        let text = std::fs::read_to_string(self.quadlet_dir.join(file)).unwrap_or_default();
        let unit = UnitFile::parse(&text).unwrap_or_default();
        let revision = unit.values("Container", "Label").find_map(|l| {
            l.strip_prefix(&format!("{REVISION_LABEL}="))
                .map(str::to_string)
        });
        let mut image = unit
            .value("Container", "Image")
            .unwrap_or_default()
            .to_string();
        // `Image=app.image` runs what the `.image` unit beside it names, as quadlet has it.
        if image.ends_with(".image") {
            let text = std::fs::read_to_string(self.quadlet_dir.join(&image)).unwrap_or_default();
            let named = UnitFile::parse(&text).unwrap_or_default();
            image =
                crate::unit::graph::image_of(crate::unit::Kind::Image, &named).unwrap_or_default();
        }
        let image_id = self.images.lock().expect("images").get(&image).cloned();
        let crashes = {
            let crashing = self.crashing.lock().expect("crashing");
            revision.as_ref().is_some_and(|r| crashing.contains(r))
                || image_id.as_ref().is_some_and(|i| crashing.contains(i))
        } || self
            .crash_while
            .lock()
            .expect("crash_while")
            .iter()
            .any(|bad| bad(self));
        let invocation = {
            let mut n = self.next.lock().expect("next");
            *n += 1;
            *n
        };
        let mut services = self.services.lock().expect("services");
        let s = services.entry(service.to_string()).or_default();
        s.invocation = invocation;
        let state = match (&self.odd_state, crashes) {
            (_, true) => ContainerState::parse("stopped"),
            (Some(odd), false) => ContainerState::parse(odd),
            (None, false) => ContainerState::Running,
        };
        if crashes || image_id.is_none() {
            s.active = "activating";
            s.sub = "auto-restart";
            s.restarts += 1;
        } else {
            s.active = "active";
            s.sub = "running";
        }
        s.container = Some(ContainerInfo {
            id: format!("c{invocation}"),
            image_id: image_id.unwrap_or_default(),
            revision,
            unit: service.to_string(),
            health: self.health.as_deref().and_then(Health::parse),
            state,
            started_at: now_secs(),
        });
    }
}

impl Systemd for SimHost {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.pass_time(units);
        let services = self.services.lock().expect("services");
        Ok(units
            .iter()
            .map(|u| {
                let s = services.get(u).cloned().unwrap_or_default();
                let invocation = if s.invocation == 0 {
                    String::new()
                } else {
                    format!("inv-{}", s.invocation)
                };
                let is_failed_dependency = self.failed_dependency.values().any(|d| d == u);
                let (active, sub) = match (is_failed_dependency, s.active) {
                    (true, _) => ("failed", "failed"),
                    (false, "") => ("inactive", "dead"),
                    (false, a) => (a, s.sub),
                };
                let props = [
                    (
                        "Requires",
                        self.failed_dependency.get(u).cloned().unwrap_or_default(),
                    ),
                    ("LoadState", "loaded".to_string()),
                    ("ActiveState", active.to_string()),
                    ("SubState", sub.to_string()),
                    (
                        "Result",
                        (if is_failed_dependency {
                            "exit-code"
                        } else {
                            "success"
                        })
                        .into(),
                    ),
                    ("NRestarts", s.restarts.to_string()),
                    ("InvocationID", invocation),
                ];
                let extra = self.props.get(u).into_iter().flatten().cloned();
                UnitStatus {
                    name: u.clone(),
                    props: props
                        .into_iter()
                        .chain(extra)
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                }
            })
            .collect())
    }
    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.note("daemon-reload".into());
        Ok(())
    }
    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        for u in units {
            self.note(format!("{} {u}", job.verb()));
            let runs = {
                let services = self.services.lock().expect("services");
                services.get(u).is_some_and(|s| {
                    s.active == "active" || (s.active == "activating" && s.sub == "start")
                })
            };
            match job {
                // As systemd: a start of a unit that runs, or is starting, changes nothing.
                Job::Start if runs => {}
                Job::Start | Job::Restart => self.start(u),
                Job::Stop if self.stuck.contains(u) => {
                    let mut services = self.services.lock().expect("services");
                    let s = services.entry(u.clone()).or_default();
                    s.active = "deactivating";
                    s.sub = "stop-sigterm";
                }
                Job::Stop => {
                    let _meeting = self.stops_meet.enter();
                    let mut services = self.services.lock().expect("services");
                    let s = services.entry(u.clone()).or_default();
                    s.active = "inactive";
                    s.sub = "dead";
                    s.container = None;
                }
            }
        }
        Ok(())
    }
    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.enqueue(job, units)
    }
    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        if !units.is_empty() {
            self.note(format!("reset-failed {}", units.join(" ")));
        }
        Ok(())
    }
    fn journal_tail(&self, unit: &str, _lines: usize) -> String {
        format!("{unit}: simulated journal")
    }
}

impl Podman for SimHost {
    fn ping(&self) -> Result<(), PodmanError> {
        Ok(())
    }
    fn image_id(&self, image: &str) -> Result<Option<String>, PodmanError> {
        Ok(self.images.lock().expect("images").get(image).cloned())
    }
    fn repo_digests(&self, _image: &str) -> Result<Vec<String>, PodmanError> {
        Ok(Vec::new())
    }
    fn pull(&self, image: &str) -> Result<String, PodmanError> {
        self.note(format!("pull {image}"));
        let id = self
            .registry
            .get(image)
            .cloned()
            .ok_or_else(|| PodmanError::Pull {
                image: image.to_string(),
                detail: "not in the simulated registry".into(),
            })?;
        self.add_image(image, &id);
        Ok(id)
    }
    fn load_archive(&self, _path: &std::path::Path) -> Result<Vec<String>, PodmanError> {
        Ok(Vec::new())
    }
    fn tag(&self, image_id: &str, target: &str) -> Result<(), PodmanError> {
        self.note(format!("tag {image_id} {target}"));
        self.add_image(target, image_id);
        Ok(())
    }
    fn prepare_oneoff(&self, _spec: &OneOff) -> Result<Prepared, PodmanError> {
        Err(no_oneoffs())
    }
    fn run_prepared(&self, _prepared: &Prepared, _timeout: Duration) -> Result<Ended, PodmanError> {
        Err(no_oneoffs())
    }
    fn oneoff_output(&self, _prepared: &Prepared) -> String {
        String::new()
    }
    fn remove_oneoff(&self, _prepared: &Prepared) -> Result<(), PodmanError> {
        Err(no_oneoffs())
    }
    fn secrets(&self) -> Result<Vec<crate::podman::SecretInfo>, PodmanError> {
        Ok(self.foreign_secrets.lock().expect("secrets").clone())
    }
    fn create_secret(&self, name: &str, _unit: &str, _value: &str) -> Result<(), PodmanError> {
        self.note(format!("secret create {name}"));
        Ok(())
    }
    fn secret_value(&self, name: &str) -> Result<Option<String>, PodmanError> {
        Ok(self
            .secret_values
            .lock()
            .expect("values")
            .get(name)
            .cloned())
    }
    fn keep_secret(&self, name: &str, _unit: &str, value: &str) -> Result<(), PodmanError> {
        self.note(format!("secret keep {name}"));
        let mut values = self.secret_values.lock().expect("values");
        values.entry(name.into()).or_insert_with(|| value.into());
        Ok(())
    }
    fn replace_secret(&self, name: &str, value: &str) -> Result<(), PodmanError> {
        self.note(format!("secret replace {name}"));
        self.set_foreign_secret(name, value, now_secs());
        Ok(())
    }
    fn remove_secret(&self, name: &str) -> Result<(), PodmanError> {
        self.note(format!("secret remove {name}"));
        self.secret_values.lock().expect("values").remove(name);
        Ok(())
    }
    fn remove_volume(&self, name: &str) -> Result<(), PodmanError> {
        self.note(format!("volume remove {name}"));
        Ok(())
    }
    fn volume_exists(&self, _name: &str) -> Result<bool, PodmanError> {
        Ok(false)
    }
    fn network_exists(&self, name: &str) -> Result<bool, PodmanError> {
        Ok(self.networks.iter().any(|n| n == name))
    }
    fn remove_network(&self, name: &str) -> Result<(), PodmanError> {
        self.note(format!("network rm {name}"));
        Ok(())
    }
    fn containers_of(
        &self,
        selection: &UnitSelection<'_>,
    ) -> Result<Vec<ContainerInfo>, PodmanError> {
        let services = self.services.lock().expect("services");
        Ok(services
            .values()
            .filter_map(|s| s.container.clone())
            .filter(|c| selection.matches(&c.unit))
            .collect())
    }
}
