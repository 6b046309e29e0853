//! The socket unit beside a container unit (`socket` option; the text comes from
//! `unit::socket`). It lives in `systemd_dir`, not the quadlet dir: quadlet 5.4 neither reads
//! nor copies a `.socket` there, so systemd would never see it. It is enabled through
//! `sockets.target.wants`, started before its service, and left running across the service's
//! restarts: only a change of its own text replaces it.

use super::target::Target;
use super::{Host, UnitError};
use crate::plan::Wanted;
use crate::state::{atomic_write, io_err, remove_file};
use crate::systemd::Job;
use std::path::PathBuf;

/// One target's socket: where it goes and what it should say.
pub struct SocketFile {
    pub unit: String,
    path: PathBuf,
    link: PathBuf,
    /// None: the target has no socket (any file there goes away).
    desired: Option<String>,
}

/// What a run did to the socket file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Unchanged,
    /// Written where there was none.
    Created,
    /// Written over a different text: the running socket must be replaced.
    Replaced,
    Removed,
}

impl SocketFile {
    pub fn of(t: &Target) -> Self {
        let unit = format!("{}.socket", t.name.stem());
        let desired = t
            .desired
            .as_ref()
            .filter(|_| t.wanted != Wanted::Absent)
            .and_then(|d| crate::unit::socket::socket_unit(&d.unit, &t.name.service()))
            .map(|u| u.render());
        SocketFile {
            path: t.systemd_dir.join(&unit),
            link: t.systemd_dir.join("sockets.target.wants").join(&unit),
            unit,
            desired,
        }
    }

    /// True when the target has a socket, or had one of refit's on disk. A socket another tool
    /// wrote (foremanctl's `foreman.socket` in front of the service refit runs) is that tool's:
    /// refit neither stops nor removes it.
    pub fn concerns(&self) -> bool {
        self.desired.is_some()
            || std::fs::read_to_string(&self.path)
                .is_ok_and(|text| text.contains(crate::unit::socket::WRITTEN_BY_REFIT))
    }

    /// Writes (and enables) or removes the file. The caller reloads systemd after it.
    pub fn write(&self) -> Result<Written, UnitError> {
        let on_disk = std::fs::read_to_string(&self.path).ok();
        let Some(text) = &self.desired else {
            if on_disk.is_none() {
                return Ok(Written::Unchanged);
            }
            remove_file(&self.link)?;
            remove_file(&self.path)?;
            return Ok(Written::Removed);
        };
        if on_disk.as_deref() == Some(text.as_str()) && self.link.exists() {
            return Ok(Written::Unchanged);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        }
        atomic_write(&self.path, text.as_bytes(), 0o644)?;
        if !self.link.exists() {
            super::links::ensure_link_dir(&self.link)?;
            std::os::unix::fs::symlink(&self.path, &self.link)
                .map_err(io_err("link", &self.link))?;
        }
        Ok(match on_disk {
            None => Written::Created,
            Some(old) if old != *text => Written::Replaced,
            Some(_) => Written::Unchanged,
        })
    }

    /// Brings the running socket in line with the file, before the services start. The socket
    /// itself is started by the services' start (the unit `Wants=` it, see
    /// `unit::socket::pull_in`). A socket whose text changed, or a new one beside a service that
    /// runs without it, cannot bind while that service still holds the addresses: the services
    /// stop first (the only refused connections a socket change costs), then the socket, and
    /// the services' start brings it back as its file now says.
    pub fn converge(
        &self,
        host: &Host,
        written: Written,
        services: &[String],
    ) -> Result<bool, UnitError> {
        match written {
            Written::Replaced => {
                host.systemd.run_job(Job::Stop, services)?;
                host.systemd
                    .run_job(Job::Stop, std::slice::from_ref(&self.unit))?;
                Ok(true)
            }
            Written::Created => {
                host.systemd.run_job(Job::Stop, services)?;
                Ok(false)
            }
            // Stopped by `prepare`, before its file went.
            Written::Removed => Ok(true),
            Written::Unchanged => Ok(false),
        }
    }

    /// A stop or removal of the unit stops its socket first: a connection to a socket left
    /// listening would start the service again.
    pub fn stop(&self, host: &Host) -> Result<(), UnitError> {
        if self.path.exists() {
            host.systemd
                .run_job(Job::Stop, std::slice::from_ref(&self.unit))?;
        }
        Ok(())
    }
}

/// A target's socket between the two steps of its change.
pub struct Pending {
    file: SocketFile,
    written: Written,
}

/// Before the unit file is written: a unit that stops takes its socket down first, and the
/// socket file is written now so that the unit's daemon-reload reads both. `present` starts
/// nothing, so it leaves the socket file for the run that starts the unit.
pub fn prepare(host: &Host, t: &Target) -> Result<Option<Pending>, UnitError> {
    let file = SocketFile::of(t);
    if !file.concerns() || t.wanted == Wanted::Present {
        return Ok(None);
    }
    // systemd can stop a socket only while its file is there to load it from.
    if matches!(t.wanted, Wanted::Absent | Wanted::Stopped) || file.desired.is_none() {
        file.stop(host)?;
    }
    let written = file.write()?;
    Ok(Some(Pending { file, written }))
}

/// After the unit file, before its services start: the socket runs as its file says. Returns
/// whether the running socket was replaced or removed (None for a unit without one).
pub fn finish(
    host: &Host,
    t: &Target,
    reloaded: bool,
    p: Option<Pending>,
) -> Result<Option<bool>, UnitError> {
    let Some(p) = p else { return Ok(None) };
    if p.written != Written::Unchanged && !reloaded {
        host.systemd.daemon_reload()?;
    }
    if t.wanted == Wanted::Stopped {
        return Ok(Some(false));
    }
    let replaced = p.file.converge(host, p.written, &t.services())?;
    Ok(Some(replaced))
}

#[cfg(test)]
mod tests {
    use crate::testing::sim::Bed;
    use serde_json::json;

    /// foremanctl's `foreman.socket` in front of the service refit runs: refit's restarts of the
    /// service, and its removal, leave the socket another tool wrote as it is.
    #[test]
    fn a_socket_another_tool_wrote_is_left_alone() {
        let bed = Bed::new("svc:1", "img-a");
        let socket = bed.dir.path().join("systemd/hello.socket");
        std::fs::create_dir_all(socket.parent().expect("dir")).expect("mkdir");
        let theirs = "[Socket]\nListenStream=127.0.0.1:8080\n";
        std::fs::write(&socket, theirs).expect("write");
        for state in ["started", "restarted", "absent"] {
            let out = bed
                .run_unit(json!({"name": "hello", "image": "svc:1", "state": state}))
                .out;
            assert_eq!(out["failed"], json!(false), "{state}: {out}");
            assert!(
                !bed.jobs().iter().any(|j| j.contains("hello.socket")),
                "{state}: the socket was stopped"
            );
            assert_eq!(
                std::fs::read_to_string(&socket).ok().as_deref(),
                Some(theirs),
                "{state}"
            );
        }
    }
}
