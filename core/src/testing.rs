//! Fakes of the host's seams, for unit tests only. They record every call that would change
//! the host, so a test can assert that nothing was touched.

pub(crate) mod health;
pub(crate) mod images;
pub mod sim;

use crate::ansible::{Invocation, ModuleSpec, Outcome};
use crate::host::Host;
use crate::podman::{ContainerInfo, Ended, OneOff, Podman, PodmanError, Prepared, UnitSelection};
use crate::quadlet::{Quadlet, QuadletError};
use crate::registry::{Location, Registry, RegistryError};
use crate::systemd::{Job, Systemd, SystemdError, UnitStatus};
use crate::time::Clock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct FakeSystemd {
    pub units: HashMap<String, UnitStatus>,
    /// Every call that changes something: "daemon-reload", "restart x.service", ...
    pub calls: Mutex<Vec<String>>,
    /// How many `show` calls were made.
    pub looks: std::sync::atomic::AtomicUsize,
}

impl FakeSystemd {
    pub fn with_active(unit: &str, invocation: &str) -> Self {
        let mut s = FakeSystemd::default();
        let props = [
            ("ActiveState", "active"),
            ("SubState", "running"),
            ("LoadState", "loaded"),
            ("InvocationID", invocation),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        s.units.insert(
            unit.to_string(),
            UnitStatus {
                name: unit.to_string(),
                props,
            },
        );
        s
    }

    /// How many times systemd was asked to `show`.
    pub fn shows(&self) -> usize {
        self.looks.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Systemd for FakeSystemd {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(units
            .iter()
            .map(|u| {
                self.units.get(u).cloned().unwrap_or_else(|| UnitStatus {
                    name: u.clone(),
                    props: HashMap::from([
                        ("LoadState".into(), "not-found".into()),
                        ("ActiveState".into(), "inactive".into()),
                    ]),
                })
            })
            .collect())
    }
    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.calls
            .lock()
            .expect("calls")
            .push("daemon-reload".into());
        Ok(())
    }
    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("{} {}", job.verb(), units.join(" ")));
        Ok(())
    }
    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.enqueue(job, units)
    }
    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        if !units.is_empty() {
            self.calls
                .lock()
                .expect("calls")
                .push(format!("reset-failed {}", units.join(" ")));
        }
        Ok(())
    }
    fn journal_tail(&self, _unit: &str, _lines: usize) -> String {
        String::new()
    }
}

#[derive(Default)]
pub struct FakePodman {
    pub images: HashMap<String, String>,
    /// The volumes podman has.
    pub volumes: Vec<String>,
    /// The networks podman has.
    pub networks: Vec<String>,
    /// podman refuses to remove a network, as when a container it does not stop uses it.
    pub network_in_use: bool,
    /// RepoDigests by reference.
    pub digests: HashMap<String, Vec<String>>,
    pub containers: Vec<ContainerInfo>,
    /// Every call that changes something, one-off phases included (`create IMAGE COMMAND`,
    /// `run ...`, `remove ...`). Shared with a `SimHost`'s, it orders podman's calls among
    /// systemd's.
    pub calls: Arc<Mutex<Vec<String>>>,
    /// The exit code every one-off container returns.
    pub oneoff_rc: i64,
    /// Every one-off container runs past its deadline, and is killed.
    pub oneoff_times_out: bool,
    /// Creating a one-off container fails, as a create podman refuses.
    pub oneoff_create_fails: bool,
    /// The one-off containers prepared and not removed yet, by ID: empty after every run.
    pub held: Mutex<HashMap<String, OneOff>>,
    /// The number the next prepared one-off's ID takes: unique however many prepare at once.
    pub next_oneoff: std::sync::atomic::AtomicUsize,
    /// The API does not answer.
    pub unreachable: bool,
    /// Every one-off container run, as it was asked for.
    pub oneoffs: Mutex<Vec<OneOff>>,
    /// One-off containers print their environment, as a migration that logs it would.
    pub oneoff_prints_env: bool,
    /// What a one-off prints when one of its command's arguments is the key (a script's
    /// phase word, as `probe`), before anything else it prints.
    pub oneoff_says: HashMap<String, String>,
    /// podman secrets: name to (unit, value).
    pub secrets: Mutex<std::collections::BTreeMap<String, (String, String)>>,
    /// Where one-off containers wait for each other, so a test sees which ran at once.
    pub oneoffs_meet: sim::meet::Meet,
    /// Its containers' health commands, refit's probes of them and podman's recorded checks.
    pub health: health::FakeHealth,
}

impl Podman for FakePodman {
    fn ping(&self) -> Result<(), PodmanError> {
        if self.unreachable {
            return Err(PodmanError::Unreachable {
                socket: "/fake/podman.sock".into(),
                detail: "connection refused".into(),
            });
        }
        Ok(())
    }
    fn image_id(&self, image: &str) -> Result<Option<String>, PodmanError> {
        Ok(self.images.get(image).cloned())
    }
    fn repo_digests(&self, image: &str) -> Result<Vec<String>, PodmanError> {
        Ok(self.digests.get(image).cloned().unwrap_or_default())
    }
    fn pull(&self, image: &str) -> Result<String, PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("pull {image}"));
        Ok("pulled".into())
    }
    fn load_archive(&self, path: &std::path::Path) -> Result<Vec<String>, PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("load {}", path.display()));
        Ok(Vec::new())
    }
    fn tag(&self, image_id: &str, target: &str) -> Result<(), PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("tag {image_id} {target}"));
        Ok(())
    }
    fn prepare_oneoff(&self, spec: &OneOff) -> Result<Prepared, PodmanError> {
        self.note_oneoff("create", spec);
        if self.oneoff_create_fails {
            return Err(PodmanError::Api {
                call: "container create".into(),
                detail: "the fake refuses the create".into(),
            });
        }
        let mut held = self.held.lock().expect("held");
        let n = self
            .next_oneoff
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = format!("oneoff-{n}");
        held.insert(id.clone(), spec.clone());
        Ok(Prepared {
            id,
            adopted: false,
            recorded_exit: None,
        })
    }
    fn run_prepared(&self, prepared: &Prepared, _timeout: Duration) -> Result<Ended, PodmanError> {
        let spec = self.held_spec(prepared)?;
        self.note_oneoff("run", &spec);
        self.oneoffs.lock().expect("oneoffs").push(spec);
        drop(self.oneoffs_meet.enter());
        if self.oneoff_times_out {
            return Ok(Ended::TimedOut);
        }
        Ok(Ended::Exited { rc: self.oneoff_rc })
    }
    fn oneoff_output(&self, prepared: &Prepared) -> String {
        let Ok(spec) = self.held_spec(prepared) else {
            return String::new();
        };
        self.note_oneoff("output", &spec);
        let said = spec
            .command
            .iter()
            .find_map(|a| self.oneoff_says.get(a))
            .cloned()
            .unwrap_or_default();
        if self.oneoff_prints_env {
            said + &spec.env.join("\n")
        } else {
            said
        }
    }
    fn remove_oneoff(&self, prepared: &Prepared) -> Result<(), PodmanError> {
        let spec = self.held_spec(prepared)?;
        self.note_oneoff("remove", &spec);
        self.held.lock().expect("held").remove(&prepared.id);
        Ok(())
    }
    fn secrets(&self) -> Result<Vec<crate::podman::SecretInfo>, PodmanError> {
        let held = self.secrets.lock().expect("secrets");
        Ok(held
            .iter()
            .map(|(name, (unit, _))| crate::podman::SecretInfo {
                name: name.clone(),
                unit: Some(unit.clone()).filter(|u| !u.is_empty()),
                updated_at: None,
            })
            .collect())
    }
    fn create_secret(&self, name: &str, unit: &str, value: &str) -> Result<(), PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("secret create {name}"));
        let mut held = self.secrets.lock().expect("secrets");
        held.entry(name.to_string())
            .or_insert_with(|| (unit.to_string(), value.to_string()));
        Ok(())
    }
    fn secret_value(&self, name: &str) -> Result<Option<String>, PodmanError> {
        let held = self.secrets.lock().expect("secrets");
        Ok(held.get(name).map(|(_, v)| v.clone()))
    }
    fn keep_secret(&self, name: &str, _unit: &str, value: &str) -> Result<(), PodmanError> {
        // Not under the unit label: `secret_env`'s prune never sees it.
        self.create_secret(name, "", value)
    }
    fn replace_secret(&self, name: &str, value: &str) -> Result<(), PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("secret replace {name}"));
        let mut held = self.secrets.lock().expect("secrets");
        held.entry(name.to_string()).or_default().1 = value.to_string();
        Ok(())
    }
    fn remove_secret(&self, name: &str) -> Result<(), PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("secret remove {name}"));
        self.secrets.lock().expect("secrets").remove(name);
        Ok(())
    }
    fn remove_volume(&self, name: &str) -> Result<(), PodmanError> {
        self.calls
            .lock()
            .expect("calls")
            .push(format!("volume remove {name}"));
        Ok(())
    }
    fn volume_exists(&self, name: &str) -> Result<bool, PodmanError> {
        Ok(self.volumes.iter().any(|v| v == name))
    }
    fn network_exists(&self, name: &str) -> Result<bool, PodmanError> {
        Ok(self.networks.iter().any(|n| n == name))
    }
    fn remove_network(&self, name: &str) -> Result<(), PodmanError> {
        let mut calls = self.calls.lock().expect("calls");
        calls.push(format!("network rm {name}"));
        if self.network_in_use {
            return Err(PodmanError::Api {
                call: format!("network rm {name}"),
                detail: "network is being used".into(),
            });
        }
        Ok(())
    }
    fn containers_of(
        &self,
        selection: &UnitSelection<'_>,
    ) -> Result<Vec<ContainerInfo>, PodmanError> {
        Ok(self
            .containers
            .iter()
            .filter(|c| selection.matches(&c.unit))
            .map(|c| self.health.as_seen(c))
            .collect())
    }
}

impl FakePodman {
    fn note_oneoff(&self, phase: &str, spec: &OneOff) {
        self.calls.lock().expect("calls").push(format!(
            "{phase} {} {}",
            spec.image,
            spec.command.join(" ")
        ));
    }

    /// The spec a held container was prepared from; a container removed already, or never
    /// prepared, is an error, as podman's 404 would be.
    fn held_spec(&self, prepared: &Prepared) -> Result<OneOff, PodmanError> {
        let held = self.held.lock().expect("held");
        held.get(&prepared.id)
            .cloned()
            .ok_or_else(|| PodmanError::Api {
                call: "container inspect".into(),
                detail: format!("no such container {}", prepared.id),
            })
    }
}

/// A registry that holds the digests it is given, by `REGISTRY/REPOSITORY:TAG`.
#[derive(Default)]
pub struct FakeRegistry {
    pub digests: HashMap<String, String>,
}

impl Registry for FakeRegistry {
    fn digest(&self, loc: &Location) -> Result<String, RegistryError> {
        let image = format!("{}:{}", loc.name(), loc.tag);
        self.digests
            .get(&image)
            .cloned()
            .ok_or(RegistryError::Refused {
                registry: loc.registry.clone(),
                image,
                status: 404,
            })
    }
}

/// quadlet, accepting every unit but those holding one of `rejected_keys`.
#[derive(Default)]
pub struct FakeQuadlet {
    pub rejected_keys: Vec<String>,
}

impl Quadlet for FakeQuadlet {
    fn check_all(
        &self,
        units: &[crate::quadlet::NewText],
        _dir: &std::path::Path,
    ) -> Result<(), QuadletError> {
        for u in units {
            if let Some(k) = self
                .rejected_keys
                .iter()
                .find(|k| u.text.lines().any(|l| l.starts_with(&format!("{k}="))))
            {
                return Err(QuadletError::Rejected {
                    unit: u.file_name.clone(),
                    detail: format!("unsupported key '{k}' in group 'Container'"),
                });
            }
        }
        Ok(())
    }
}

/// A clock whose sleeps only move its own time forward, in a boot that `reboot` ends.
pub struct FakeClock {
    start: Instant,
    offset: Mutex<Duration>,
    boot: Mutex<FakeBoot>,
}

struct FakeBoot {
    id: String,
    /// The clock's offset when this boot began.
    began_at: Duration,
}

/// How long the fake host had been up when the clock was made: a lease's heartbeat is never
/// near zero on a real host either.
const FAKE_UPTIME: Duration = Duration::from_secs(3600);

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock {
            start: Instant::now(),
            offset: Mutex::new(Duration::ZERO),
            boot: Mutex::new(FakeBoot {
                id: "boot-1".into(),
                began_at: Duration::ZERO,
            }),
        }
    }
}

impl FakeClock {
    /// A new boot: another ID, and the time since boot starts again.
    pub fn reboot(&self) {
        let now = *self.offset.lock().expect("clock");
        let mut boot = self.boot.lock().expect("clock");
        let n: u32 = boot.id.trim_start_matches("boot-").parse().unwrap_or(1);
        *boot = FakeBoot {
            id: format!("boot-{}", n + 1),
            began_at: now,
        };
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.start + *self.offset.lock().expect("clock")
    }
    fn sleep(&self, d: Duration) {
        *self.offset.lock().expect("clock") += d;
    }
    fn boot_time(&self) -> Result<crate::time::BootTime, crate::time::BootTimeError> {
        let now = *self.offset.lock().expect("clock");
        let boot = self.boot.lock().expect("clock");
        Ok(crate::time::BootTime {
            boot_id: boot.id.clone(),
            since_boot: FAKE_UPTIME + now - boot.began_at,
        })
    }
}

/// What a module returned on the fakes, and how much fake time it took.
pub struct Responded {
    pub out: serde_json::Value,
    pub fake_time: Duration,
}

/// Runs a module through the driver, as Ansible would: `args` written to `dir/args.json`, on
/// `systemd` and `podman`, with a fresh fake clock, an empty registry and a quadlet that
/// accepts every unit.
pub fn respond_on<P, E>(
    spec: &ModuleSpec,
    dir: &std::path::Path,
    args: &serde_json::Value,
    systemd: &dyn Systemd,
    podman: &dyn Podman,
    body: impl FnOnce(P, &Invocation, &Host) -> Result<Outcome, E>,
) -> Responded
where
    P: serde::de::DeserializeOwned,
    E: std::fmt::Display,
{
    let path = dir.join("args.json");
    std::fs::write(&path, args.to_string()).expect("write args");
    let (clock, registry, quadlet) = (
        FakeClock::default(),
        FakeRegistry::default(),
        FakeQuadlet::default(),
    );
    let host = Host {
        systemd,
        podman,
        registry: &registry,
        clock: &clock,
        quadlet: &quadlet,
    };
    let start = clock.now();
    let out = crate::ansible::driver::respond(spec, &path, |p, inv| body(p, inv, &host));
    Responded {
        out,
        fake_time: clock.now() - start,
    }
}

/// Writes `text` to `rel` under `root`, creating the directories on the way.
pub fn put_file(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}
