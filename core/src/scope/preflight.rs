//! What a user scope needs from the host, checked before anything is touched; each refusal
//! names its fix. Paths are read under `root` so tests can give a made-up host.

use super::UserScope;
use super::users::{Account, has_subids, read};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "scope: user: {0} has no linger, so its services would stop at its logout and not start at boot; run `loginctl enable-linger {0}` as root"
    )]
    Linger(String),
    #[error(
        "scope: user: {dir} does not exist, so {user}'s systemd manager is not running; enable linger (`loginctl enable-linger {user}`), which starts it, or log {user} in"
    )]
    RuntimeDir { user: String, dir: String },
    #[error(
        "scope: user: {user} has no range in {file}, so rootless podman cannot map its images' users; add one, for example `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {user}`"
    )]
    SubIds { user: String, file: &'static str },
    #[error(
        "{what}: port {port} is below net.ipv4.ip_unprivileged_port_start ({start}), so {user}'s services cannot bind it; use a port from {start} up, or lower the limit as root (`sysctl net.ipv4.ip_unprivileged_port_start={port}`, kept in /etc/sysctl.d/), or serve it from root's scope"
    )]
    Port {
        what: String,
        port: u16,
        start: u32,
        user: String,
    },
}

pub fn host(u: &UserScope, root: &Path) -> Result<(), PreflightError> {
    let under = |p: &str| root.join(p.trim_start_matches('/'));
    if !under(&format!("/var/lib/systemd/linger/{}", u.name)).exists() {
        return Err(PreflightError::Linger(u.name.clone()));
    }
    let runtime = u.runtime_dir.display().to_string();
    if !under(&runtime).is_dir() {
        return Err(PreflightError::RuntimeDir {
            user: u.name.clone(),
            dir: runtime,
        });
    }
    let account = Account {
        name: u.name.clone(),
        uid: u.uid,
        gid: u.gid,
        home: u.home.clone(),
    };
    for file in ["/etc/subuid", "/etc/subgid"] {
        if !has_subids(&read(&under(file)), &account) {
            return Err(PreflightError::SubIds {
                user: u.name.clone(),
                file,
            });
        }
    }
    Ok(())
}

pub fn port(u: &UserScope, port: u16, what: &str, root: &Path) -> Result<(), PreflightError> {
    // The kernel's default when the file cannot be read (an old kernel has no such sysctl).
    let start = read(&root.join("proc/sys/net/ipv4/ip_unprivileged_port_start"))
        .trim()
        .parse::<u32>()
        .unwrap_or(1024);
    if port != 0 && u32::from(port) < start {
        return Err(PreflightError::Port {
            what: what.to_string(),
            port,
            start,
            user: u.name.clone(),
        });
    }
    Ok(())
}

/// The host port of a `PublishPort=` value (`[IP:][HOSTPORT:]CONTAINERPORT[/PROTO]`); a range
/// gives its first port. None when it publishes to a random host port.
pub fn port_of_publish(value: &str) -> Option<u16> {
    let value = value.split('/').next().unwrap_or(value);
    // An IPv6 address sits in brackets; what follows it is the ports.
    let ports = value.rsplit_once(']').map_or(value, |(_, rest)| rest);
    let parts: Vec<&str> = ports.trim_start_matches(':').split(':').collect();
    let host = match parts.as_slice() {
        [_container] => return None,
        [host, _container] => *host,
        [_ip, host, _container] => *host,
        _ => return None,
    };
    host.split('-').next()?.parse().ok()
}

/// The port of a socket's `ListenStream=` value (`PORT`, `HOST:PORT`, `[IPV6]:PORT`); None for
/// a unix socket path.
pub fn port_of_listen(value: &str) -> Option<u16> {
    if value.starts_with('/') || value.starts_with('@') {
        return None;
    }
    value.rsplit(':').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn app() -> UserScope {
        UserScope {
            name: "app".into(),
            uid: 1001,
            gid: 1001,
            groups: vec![1001],
            home: "/home/app".into(),
            runtime_dir: "/run/user/1001".into(),
        }
    }

    /// A made-up host with what `app` needs, less what `without` names.
    fn host_without(without: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        let put = |p: &str, text: &str| {
            let path: PathBuf = d.path().join(p);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        if without != "linger" {
            put("var/lib/systemd/linger/app", "");
        }
        if without != "runtime" {
            std::fs::create_dir_all(d.path().join("run/user/1001")).expect("mkdir");
        }
        put(
            "etc/subuid",
            if without == "subuid" {
                "other:1:65536\n"
            } else {
                "app:200000:65536\n"
            },
        );
        put(
            "etc/subgid",
            if without == "subgid" {
                ""
            } else {
                "app:200000:65536\n"
            },
        );
        put("proc/sys/net/ipv4/ip_unprivileged_port_start", "1024\n");
        d
    }

    #[test]
    fn a_host_with_everything_passes_and_each_missing_part_names_its_fix() {
        assert!(host(&app(), host_without("").path()).is_ok());
        for (without, fix) in [
            ("linger", "loginctl enable-linger app"),
            ("runtime", "/run/user/1001 does not exist"),
            ("subuid", "no range in /etc/subuid"),
            ("subgid", "no range in /etc/subgid"),
        ] {
            let err = host(&app(), host_without(without).path()).expect_err(without);
            assert!(err.to_string().contains(fix), "{without}: {err}");
        }
    }

    #[test]
    fn a_port_below_the_unprivileged_start_is_refused_naming_the_parameter() {
        let h = host_without("");
        let err = port(&app(), 80, "ports[0]", h.path()).expect_err("80");
        assert!(
            err.to_string().starts_with("ports[0]: port 80 is below"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("sysctl net.ipv4.ip_unprivileged_port_start=80")
        );
        assert!(port(&app(), 8080, "ports[0]", h.path()).is_ok());
    }

    #[test]
    fn ports_are_read_from_publish_and_listen_values() {
        assert_eq!(port_of_publish("8080:80"), Some(8080));
        assert_eq!(port_of_publish("127.0.0.1:80:8080/tcp"), Some(80));
        assert_eq!(port_of_publish("[::1]:443:8443"), Some(443));
        assert_eq!(port_of_publish("127.0.0.1::80"), None);
        assert_eq!(port_of_publish("80"), None);
        assert_eq!(port_of_publish("1000-1002:1000-1002"), Some(1000));
        assert_eq!(port_of_listen("127.0.0.1:80"), Some(80));
        assert_eq!(port_of_listen("[::1]:8080"), Some(8080));
        assert_eq!(port_of_listen("443"), Some(443));
        assert_eq!(port_of_listen("/run/app.sock"), None);
    }
}
