//! Scopes: whose services a module call manages. `System` is root's (the system manager,
//! `/etc/containers/systemd`, the system podman socket, `/var/lib/refit`); `User` is one user's
//! (`systemctl --user`, `~/.config/containers/systemd`, the podman socket under
//! `/run/user/UID`, a state dir 0700 under the home). Every place refit touches asks the scope.
//!
//! It is resolved once per module call, from the common options `scope` and `scope_user`, by
//! the driver (ansible/driver.rs): the paths the caller did not give become the scope's, the
//! preflight refuses a user scope that cannot work, and a root call then runs as the user, so
//! that everything it writes belongs to the user and it never writes as root into a dir the
//! user owns. It owns no systemd or podman logic: those ask it where and as whom.

mod preflight;
mod users;

pub use preflight::{port_of_listen, port_of_publish};

use crate::ansible::{Default, Kind, OptionSpec};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const SCOPE_DOC: &str = "Whose services: C(system) is root's (the system manager, C(/etc/containers/systemd), C(/run/podman/podman.sock), C(/var/lib/refit)); C(user) is the services of O(scope_user), as C(systemctl --user) runs them: its quadlet dir C(~/.config/containers/systemd), its podman socket C(/run/user/UID/podman/podman.sock), its state dir C(~/.local/state/refit) (0700) and its C(~/.config/systemd/user), each unless given. Run as root (the usual C(become)), the call then runs as that user, so every file it writes is the user's. Each scope has its own lock and lease: a run in one never waits for, nor touches, a run in another.\nA user scope is refused, naming the fix, when the user has no linger (its services would stop at logout and not start at boot: C(loginctl enable-linger USER)), no C(/run/user/UID), or no range in C(/etc/subuid) or C(/etc/subgid); and a port below C(net.ipv4.ip_unprivileged_port_start) in O(ports) or a socket's C(listen) is refused too.";

pub const SCOPE_USER_DOC: &str = "With O(scope=user): the user whose services these are, by name. Without it, the user the module runs as (C(become_user)); root must name one.";

/// The two common options; every module's spec lists them.
pub const SCOPE_OPTION: OptionSpec = OptionSpec::new("scope", Kind::Str, SCOPE_DOC)
    .default(Default::Str("system"))
    .choices(&["system", "user"]);
pub const SCOPE_USER_OPTION: OptionSpec = OptionSpec::new("scope_user", Kind::Str, SCOPE_USER_DOC);

/// The options whose defaults are the scope's, and that an empty value leaves to the scope.
const PLACES: [&str; 4] = ["quadlet_dir", "systemd_dir", "state_dir", "podman_socket"];

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    #[default]
    System,
    User(UserScope),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserScope {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Its own gid and the groups that list it: what a login of the user would have.
    pub groups: Vec<u32>,
    pub home: PathBuf,
    /// `/run/user/UID`, where its manager and podman sockets live.
    pub runtime_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error(
        "scope_user: no user {0:?} in /etc/passwd; give an existing user, or create it (useradd --create-home {0})"
    )]
    NoSuchUser(String),
    #[error(
        "scope_user: {0:?} is root, whose services are scope: system; give scope: system, or an unprivileged user"
    )]
    Root(String),
    #[error(
        "scope_user is required with scope: user when the module runs as root; give the user whose services these are (or run it with become_user)"
    )]
    UserRequired,
    #[error(
        "scope: user: the module runs as uid {0}, which is not in /etc/passwd; give scope_user"
    )]
    Unnamed(u32),
    #[error(
        "scope_user: the module runs as uid {running}, which is not {user}'s, and only root can act for another user; run it as root (become: true) or as {user}"
    )]
    NotPermitted { running: u32, user: String },
    #[error(transparent)]
    Preflight(#[from] preflight::PreflightError),
    #[error(
        "scope: user: cannot enable the user's podman.socket, which refit reaches podman through: {0}; enable it as the user (`systemctl --user enable --now podman.socket`)"
    )]
    PodmanSocket(#[source] crate::systemd::SystemdError),
    #[error(
        "cannot run as {user} (uid {uid}): {source}; run the module as root or as {user} itself"
    )]
    Enter {
        user: String,
        uid: u32,
        #[source]
        source: std::io::Error,
    },
}

impl Scope {
    /// The scope the validated parameters name, looked up in this host's user database.
    pub fn of_params(params: &Map<String, Value>) -> Result<Scope, ScopeError> {
        if params.get("scope").and_then(Value::as_str) != Some("user") {
            return Ok(Scope::System);
        }
        let named = params
            .get("scope_user")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let running = rustix::process::geteuid().as_raw();
        let passwd = users::read(Path::new("/etc/passwd"));
        let account = match named {
            Some(name) => users::find(&passwd, users::Wanted::Name(name))
                .ok_or_else(|| ScopeError::NoSuchUser(name.to_string()))?,
            None if running == 0 => return Err(ScopeError::UserRequired),
            None => users::find(&passwd, users::Wanted::Uid(running))
                .ok_or(ScopeError::Unnamed(running))?,
        };
        if account.uid == 0 {
            return Err(ScopeError::Root(account.name));
        }
        if running != 0 && running != account.uid {
            return Err(ScopeError::NotPermitted {
                running,
                user: account.name,
            });
        }
        let groups = users::groups_of(
            &users::read(Path::new("/etc/group")),
            &account.name,
            account.gid,
        );
        Ok(Scope::User(UserScope {
            runtime_dir: PathBuf::from(format!("/run/user/{}", account.uid)),
            name: account.name,
            uid: account.uid,
            gid: account.gid,
            groups,
            home: account.home,
        }))
    }

    /// Where this scope keeps `place` (one of `PLACES`).
    fn place(&self, place: &str) -> Option<String> {
        let path = match (self, place) {
            (Scope::System, "quadlet_dir") => PathBuf::from("/etc/containers/systemd"),
            (Scope::System, "systemd_dir") => PathBuf::from("/etc/systemd/system"),
            (Scope::System, "state_dir") => PathBuf::from(crate::state::DEFAULT_STATE_DIR),
            (Scope::System, "podman_socket") => PathBuf::from(crate::podman::DEFAULT_SOCKET),
            (Scope::User(u), "quadlet_dir") => u.home.join(".config/containers/systemd"),
            (Scope::User(u), "systemd_dir") => u.home.join(".config/systemd/user"),
            (Scope::User(u), "state_dir") => u.home.join(".local/state/refit"),
            (Scope::User(u), "podman_socket") => u.runtime_dir.join("podman/podman.sock"),
            _ => return None,
        };
        Some(path.display().to_string())
    }

    /// Empty place options, which a role passes for "the scope's", are taken as not given.
    pub fn drop_empty_places(raw: &mut Map<String, Value>) {
        raw.retain(|k, v| !(PLACES.contains(&k.as_str()) && v.as_str() == Some("")));
    }

    /// Gives every place option of the spec that `raw` (what the caller sent) did not name the
    /// scope's own value in `params`.
    pub fn fill_places(&self, raw: &Map<String, Value>, params: &mut Map<String, Value>) {
        for place in PLACES {
            if params.contains_key(place)
                && !raw.contains_key(place)
                && let Some(value) = self.place(place)
            {
                params.insert(place.to_string(), Value::String(value));
            }
        }
    }

    /// Refuses a user scope that cannot work on this host, each reason naming its fix.
    pub fn preflight(&self) -> Result<(), ScopeError> {
        match self {
            Scope::System => Ok(()),
            Scope::User(u) => Ok(preflight::host(u, Path::new("/"))?),
        }
    }

    /// Refuses a port this scope cannot bind (`what` names the parameter it came from).
    pub fn refuse_privileged_port(&self, port: u16, what: &str) -> Result<(), ScopeError> {
        match self {
            Scope::System => Ok(()),
            Scope::User(u) => Ok(preflight::port(u, port, what, Path::new("/"))?),
        }
    }

    /// Whether entering this scope changes who the process is: root acting for a user.
    pub fn switches_user(&self) -> bool {
        matches!(self, Scope::User(u) if rustix::process::geteuid().as_raw() != u.uid)
    }

    /// Makes this process the scope's user, for good: groups, gid, then uid, so no way back to
    /// root is kept. Only for a process of one thread (the driver before the module's body):
    /// the kernel changes the ids of the calling thread, and threads started after inherit them.
    pub fn enter(&self) -> Result<(), ScopeError> {
        let Scope::User(u) = self else { return Ok(()) };
        if !self.switches_user() {
            return Ok(());
        }
        let fail = |source: std::io::Error| ScopeError::Enter {
            user: u.name.clone(),
            uid: u.uid,
            source,
        };
        if thread_count() != 1 {
            return Err(fail(std::io::Error::other(
                "the process has more than one thread (a bug in refit)",
            )));
        }
        let gids: Vec<rustix::process::Gid> = u
            .groups
            .iter()
            .map(|g| rustix::process::Gid::from_raw(*g))
            .collect();
        let gid = rustix::process::Gid::from_raw(u.gid);
        let uid = rustix::process::Uid::from_raw(u.uid);
        rustix::thread::set_thread_groups(&gids).map_err(|e| fail(e.into()))?;
        rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(|e| fail(e.into()))?;
        rustix::thread::set_thread_res_uid(uid, uid, uid).map_err(|e| fail(e.into()))?;
        Ok(())
    }

    /// A user's podman socket, enabled and started when nothing listens on it: refit's modules reach
    /// podman through it, and a user's podman.socket is not enabled by podman's packages.
    pub fn start_podman_socket(&self, socket: &Path) -> Result<(), ScopeError> {
        // A socket file can outlive its unit (stopped, or disabled with --now): only a
        // connection tells that something listens.
        if matches!(self, Scope::System) || std::os::unix::net::UnixStream::connect(socket).is_ok()
        {
            return Ok(());
        }
        crate::systemd::Systemctl::for_scope(self)
            .enable_now("podman.socket")
            .map_err(ScopeError::PodmanSocket)
    }

    /// `program` (systemctl, journalctl) aimed at this scope's manager: for a user, `--user`
    /// with its runtime dir, where the manager's private socket and bus are.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        if let Scope::User(u) = self {
            cmd.env("XDG_RUNTIME_DIR", &u.runtime_dir)
                .env(
                    "DBUS_SESSION_BUS_ADDRESS",
                    format!("unix:path={}", u.runtime_dir.join("bus").display()),
                )
                .env("HOME", &u.home);
            if program == "systemctl" {
                cmd.arg("--user");
            }
        }
        cmd
    }

    /// journalctl's match for one unit of this scope.
    pub fn journal_unit_arg(&self) -> &'static str {
        match self {
            Scope::System => "--unit",
            Scope::User(_) => "--user-unit",
        }
    }
}

/// Threads of this process, from /proc; 0 when it cannot be read, which `enter` refuses.
fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
