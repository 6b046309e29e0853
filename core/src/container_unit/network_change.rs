//! A changed `.network` unit whose change podman can apply only to a new network. quadlet's
//! network service creates the network only when it is missing (`podman network create
//! --ignore`), and podman 5.4 changes no option of a network that exists in place. A network
//! holds no data, so refit makes it anew: it stops every unit that joins it, removes it
//! (`podman network rm`, never forced), and starts the network's service again, which creates
//! it with the new options; the users then start as their own plans say (their effective
//! revision changed with the network's), and those the run does not restart are started again.
//!
//! What needs no new network: the unit's other sections (`[Unit]`, `[Service]`, `[Install]`),
//! the options of how podman is called, and a new `NetworkName=`, which names another network.

use super::error::NetworkNotRemoved;
use super::report::Report;
use super::target::Recreation;
use super::volume_change::{changed_resource_option, resource_name};
use super::work::Work;
use super::{Host, UnitError};
use crate::plan::{Action, Wanted};
use crate::systemd::Job;
use crate::unit::graph::references;
use crate::unit::{Kind, UnitFile, UnitName};
use std::path::Path;

const SECTION: &str = "Network";

/// `[Network]` options whose change needs no new network: they say how podman is called, or
/// what the service does when it stops.
const NOT_THE_NETWORK: [&str; 3] = ["GlobalArgs", "ContainersConfModule", "NetworkDeleteOnStop"];

/// The action a recreation adds to the network unit's result.
pub const ACTION: &str = "recreate_network";

/// Gives each `.network` target whose new text changes an option of a network podman has its
/// recreation: in the plan, in the result (`network_recreated`) and in its actions. Asks
/// podman and reads the quadlet dir; changes nothing, so check mode reports it as it is.
pub fn plan_all(host: &Host, work: &mut [Work], quadlet_dir: &Path) -> Result<(), UnitError> {
    for i in 0..work.len() {
        let w = &work[i];
        let t = &w.target;
        if t.name.kind() != Kind::Network
            || t.wanted == Wanted::Absent
            || !w.plan.file.contains(&Action::WriteUnit)
        {
            continue;
        }
        let (Some(d), Some(text)) = (&t.desired, &w.observed.file_text) else {
            continue;
        };
        // A file that does not parse is replaced, as any unit's is.
        let Ok(old) = UnitFile::parse(text) else {
            continue;
        };
        let Some(option) = changed_option(&old, &d.unit) else {
            continue;
        };
        let network = network_name(&d.unit, t.name.stem());
        if !host.podman.network_exists(&network)? {
            continue;
        }
        let users = users(&t.name.file_name(), work, quadlet_dir)?;
        let planned = work
            .iter()
            .flat_map(|w| w.plan.starts.iter().map(|s| s.service.clone()))
            .filter(|s| users.contains(s))
            .collect();
        let w = &mut work[i];
        w.report.result.network_recreated = Some(network.clone());
        w.report.result.actions.push(ACTION.to_string());
        w.plan.recreate = Some(Recreation {
            network,
            option,
            service: w.target.name.service(),
            users,
            planned,
        });
    }
    Ok(())
}

/// Makes the network anew: stops its running users, removes it, and starts its service again
/// (which creates it with the unit's new options); then starts again the users that ran and
/// that no plan of this run starts. Runs after the unit's new text is written and reloaded.
/// Returns the users it stopped.
pub fn recreate(host: &Host, r: &Recreation) -> Result<Vec<String>, UnitError> {
    let statuses = host.systemd.show(&r.users)?;
    let running: Vec<String> = statuses
        .iter()
        .zip(&r.users)
        .filter(|(st, _)| matches!(st.active_state(), "active" | "activating" | "reloading"))
        .map(|(_, u)| u.clone())
        .collect();
    for svc in &running {
        host.systemd.run_job(Job::Stop, std::slice::from_ref(svc))?;
    }
    if let Err(source) = host.podman.remove_network(&r.network) {
        // Nothing is left stopped for a network that stays as it was.
        start_again(host, &running, &[])?;
        return Err(Box::new(NetworkNotRemoved {
            network: r.network.clone(),
            option: r.option.clone(),
            source,
        })
        .into());
    }
    host.systemd
        .run_job(Job::Restart, std::slice::from_ref(&r.service))?;
    start_again(host, &running, &r.planned)?;
    Ok(running)
}

/// After a run that made the network anew failed: when the unit's older text went back
/// (`rolled_back`), the network is made anew with it; then every user stopped for the first
/// recreation runs again, including those the failure kept from their own restart. Returns
/// the sentence for the message.
pub fn after_failure(host: &Host, r: &Recreation, report: &Report, rolled_back: bool) -> String {
    let again = Recreation {
        planned: Vec::new(),
        ..r.clone()
    };
    let remade = if rolled_back {
        recreate(host, &again).map(|_| ())
    } else {
        Ok(())
    };
    let started = start_again(host, &report.stopped_users, &[]);
    match (remade, started) {
        (Ok(()), Ok(())) if rolled_back => format!(
            "the network {} was made anew with the older text, and its users run again",
            r.network
        ),
        (Ok(()), Ok(())) => format!(
            "the network {} keeps the new options, and its users run again",
            r.network
        ),
        (Err(e), _) | (_, Err(e)) => format!(
            "the network {} or its users did not come back ({e}); start them with systemctl start {}",
            r.network,
            report.stopped_users.join(" ")
        ),
    }
}

/// Starts `stopped` again, but for those in `planned`: pods before their containers, the
/// reverse of the stops.
fn start_again(host: &Host, stopped: &[String], planned: &[String]) -> Result<(), UnitError> {
    for svc in stopped.iter().rev().filter(|s| !planned.contains(s)) {
        host.systemd
            .run_job(Job::Start, std::slice::from_ref(svc))?;
    }
    Ok(())
}

/// A container or pod the run or the quadlet dir has: the units it refers to, and its services.
struct Candidate {
    name: UnitName,
    refers_to: Vec<String>,
    services: Vec<String>,
}

/// The services of the units that join `network` (a file name such as `app.network`): the
/// run's units and those only in the quadlet dir, containers with `Network=` and pods with
/// `Network=` and their containers. Containers come first, each group in name order.
fn users(network: &str, work: &[Work], quadlet_dir: &Path) -> Result<Vec<String>, UnitError> {
    // Every container and pod, by file name: the run's texts, then the files on disk.
    let mut units: Vec<Candidate> = Vec::new();
    for w in work {
        let Some(d) = &w.target.desired else { continue };
        units.push(Candidate {
            name: w.target.name.clone(),
            refers_to: references(d.kind, &d.unit)
                .into_iter()
                .map(|r| r.to)
                .collect(),
            services: w.target.services(),
        });
    }
    for (name, unit) in on_disk(quadlet_dir)? {
        if units.iter().all(|c| c.name.file_name() != name.file_name()) {
            units.push(Candidate {
                refers_to: references(name.kind(), &unit)
                    .into_iter()
                    .map(|r| r.to)
                    .collect(),
                services: vec![name.service()],
                name,
            });
        }
    }
    units.sort_by_key(|c| c.name.file_name());
    let pods: Vec<String> = units
        .iter()
        .filter(|c| c.name.kind() == Kind::Pod && c.refers_to.iter().any(|r| r == network))
        .map(|c| c.name.file_name())
        .collect();
    let joins = |c: &Candidate| {
        c.name.kind() == Kind::Container
            && c.refers_to.iter().any(|r| r == network || pods.contains(r))
    };
    let containers = units.iter().filter(|c| joins(c));
    let pod_units = units.iter().filter(|c| pods.contains(&c.name.file_name()));
    Ok(containers
        .chain(pod_units)
        .flat_map(|c| c.services.iter().cloned())
        .collect())
}

/// The `.container` and `.pod` files in the quadlet dir (not templates: their instances are
/// not known here), parsed; a file that does not parse is left out.
fn on_disk(dir: &Path) -> Result<Vec<(UnitName, UnitFile)>, UnitError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::state::io_err("read", dir)(e).into()),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        // A name without a suffix would read as a `.container`: only the files count.
        let unit_file = file.ends_with(".container") || file.ends_with(".pod");
        if !unit_file || entry.path().is_dir() {
            continue;
        }
        let Ok(name) = UnitName::parse(&file) else {
            continue;
        };
        if !matches!(name.kind(), Kind::Container | Kind::Pod) || name.is_template() {
            continue;
        }
        let Some(text) = crate::state::read_optional(&entry.path())? else {
            continue;
        };
        if let Ok(unit) = UnitFile::parse(&text) {
            out.push((name, unit));
        }
    }
    Ok(out)
}

/// The first `[Network]` option that shapes the network and differs; None when none does, or
/// when `new` names another network.
fn changed_option(old: &UnitFile, new: &UnitFile) -> Option<String> {
    changed_resource_option(SECTION, "NetworkName", &NOT_THE_NETWORK, old, new)
}

/// The network quadlet makes of `stem.network`: its `NetworkName=`, else `systemd-STEM`.
fn network_name(unit: &UnitFile, stem: &str) -> String {
    resource_name(SECTION, "NetworkName", unit, stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_of_the_network_needs_a_new_one_and_the_way_podman_is_called_does_not() {
        let unit = |text: &str| UnitFile::parse(text).expect("parses");
        let old = unit("[Network]\nDriver=lo\nLabel=tier=a\n");
        assert_eq!(
            changed_option(&old, &unit("[Network]\nDriver=lo\nLabel=tier=b\n")),
            Some("Label".into())
        );
        assert_eq!(
            changed_option(&old, &unit("[Network]\nLabel=tier=a\n")),
            Some("Driver".into())
        );
        let same = unit(
            "[Unit]\nDescription=n\n[Network]\nDriver=lo\nLabel=tier=a\nGlobalArgs=--log-level=debug\nNetworkDeleteOnStop=true\n",
        );
        assert_eq!(changed_option(&old, &same), None);
        let renamed = unit("[Network]\nNetworkName=other\nLabel=tier=b\n");
        assert_eq!(changed_option(&old, &renamed), None);
        assert_eq!(network_name(&renamed, "app"), "other");
        assert_eq!(network_name(&old, "app"), "systemd-app");
    }

    #[test]
    fn the_users_are_containers_on_it_and_pods_on_it_with_their_containers() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir(dir.path().join("users")).expect("mkdir");
        for (name, text) in [
            ("stack.pod", "[Pod]\nNetwork=app.network\n"),
            ("other.pod", "[Pod]\nNetwork=host\n"),
            ("in.container", "[Container]\nImage=x\nPod=stack.pod\n"),
            ("out.container", "[Container]\nImage=x\nPod=other.pod\n"),
            (
                "web.container",
                "[Container]\nImage=x\nNetwork=app.network:ip=10.0.0.2\n",
            ),
            ("side.container", "[Container]\nImage=x\nNetwork=host\n"),
            (
                "t@.container",
                "[Container]\nImage=x\nNetwork=app.network\n",
            ),
        ] {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        assert_eq!(
            users("app.network", &[], dir.path()).expect("read"),
            ["in.service", "web.service", "stack-pod.service"]
        );
        assert!(
            users("gone.network", &[], dir.path())
                .expect("read")
                .is_empty()
        );
    }
}
