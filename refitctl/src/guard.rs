//! What refitctl judges before it runs anything or writes anything: the state dir is the
//! user's alone, every remembered path is absolute, and what goes into ansible-playbook's
//! extra vars (which Ansible templates) is a plain name or number.

use crate::cli::{Command, Common};
use crate::error::CtlError;
use crate::memory::Parameters;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How the events file of a run starts: one left behind is a killed run's.
pub const EVENTS_PREFIX: &str = ".events-";

/// Removes the events files of killed runs. Called with the lock held, which every run holds
/// until its ansible-playbook ends too, so no run still writes one of them.
pub fn remove_stale_events(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let stale = e.file_name().to_string_lossy().starts_with(EVENTS_PREFIX)
            && e.file_type().is_ok_and(|t| t.is_file());
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Refuses a stream, `--serial` or revision that is not plain, before anything runs.
pub fn inputs(command: &Command, params: &Parameters) -> Result<(), CtlError> {
    let to = match command {
        Command::Upgrade { to, .. } => Some(to),
        Command::Plan { to, .. } | Command::Rollback { to, .. } => to.as_ref(),
        _ => None,
    };
    for (what, value) in [
        ("--to", to),
        ("the remembered stream", params.stream.as_ref()),
    ] {
        if let Some(v) = value.filter(|v| !is_stream(v)) {
            return Err(CtlError::BadInput {
                what,
                value: v.clone(),
                want: "a plain name: letters, digits, '.', '-' and '_'",
            });
        }
    }
    if let Some(s) = params.serial.as_ref().filter(|s| !is_serial(s)) {
        return Err(CtlError::BadInput {
            what: "--serial",
            value: s.clone(),
            want: "a number, a percentage like 25%, or a comma list of them like 1,25%",
        });
    }
    for (what, p) in [
        (
            "inventory",
            params
                .inventory
                .as_ref()
                .filter(|i| !i.contains(','))
                .map(PathBuf::from),
        ),
        ("image_archive", params.image_archive.clone()),
        ("auth_file", params.auth_file.clone()),
        ("deployment", params.deployment.clone()),
    ] {
        if let Some(p) = p.filter(|p| p.is_relative()) {
            return Err(CtlError::RelativePath { what, path: p });
        }
    }
    Ok(())
}

/// The flags with every path made absolute against the current dir, so that a later run
/// from another dir reads the same files; a comma list of hosts is not a path.
pub fn absolute_flags(flags: &Common) -> Result<Common, CtlError> {
    let abs = |p: &Path| {
        std::path::absolute(p).map_err(|source| CtlError::NotAbsolute {
            path: p.to_path_buf(),
            source,
        })
    };
    let mut out = flags.clone();
    if let Some(i) = flags.inventory.as_ref().filter(|i| !i.contains(',')) {
        out.inventory = Some(abs(Path::new(i))?.display().to_string());
    }
    out.image_archive = flags.image_archive.as_deref().map(abs).transpose()?;
    out.auth_file = flags.auth_file.as_deref().map(abs).transpose()?;
    Ok(out)
}

/// Refuses a state dir of another user, or one others can write, and such a remembered
/// parameters file: refitctl runs what it remembers there. Writes nothing.
pub fn trusted_state_dir(dir: &Path) -> Result<(), CtlError> {
    for p in [dir.to_path_buf(), dir.join(crate::memory::FILE)] {
        owned_alone(&p)?;
    }
    Ok(())
}

/// Creates the state dir 0700 when missing, once the inputs are judged.
pub fn make_state_dir(dir: &Path) -> Result<(), CtlError> {
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CtlError::StateDir {
            path: dir.to_path_buf(),
            source: e,
        })
}

/// Refuses `p` when it is there and another user owns it or others can write it.
fn owned_alone(p: &Path) -> Result<(), CtlError> {
    let Ok(m) = p.symlink_metadata() else {
        return Ok(());
    };
    let me = rustix::process::geteuid().as_raw();
    let detail = if m.file_type().is_symlink() {
        "a symlink".to_string()
    } else if m.uid() != me {
        format!(
            "owned by uid {}, not by uid {me} that runs refitctl",
            m.uid()
        )
    } else if m.mode() & 0o022 != 0 {
        format!("writable by others (mode {:o})", m.mode() & 0o7777)
    } else {
        return Ok(());
    };
    Err(CtlError::UntrustedStateDir {
        path: p.to_path_buf(),
        why: detail,
    })
}

fn is_stream(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// Ansible's `serial`: a number, a percentage, or a comma list of them.
fn is_serial(s: &str) -> bool {
    s.split(',').all(|part| {
        let n = part.trim().strip_suffix('%').unwrap_or(part.trim());
        !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn upgrade(to: &str) -> Command {
        Command::Upgrade {
            to: to.into(),
            common: Common::default(),
        }
    }

    #[test]
    fn a_stream_or_serial_that_ansible_would_template_is_refused() {
        let plain = Parameters::default();
        assert!(inputs(&upgrade("3.16"), &plain).is_ok());
        for bad in ["{{ lookup('pipe', 'id') }}", "1.1 x", "", "--x"] {
            let err = inputs(&upgrade(bad), &plain).expect_err(bad);
            assert!(err.to_string().contains("--to"), "{err}");
        }
        for (serial, ok) in [
            ("1", true),
            ("25%", true),
            ("1,25%,100%", true),
            ("{{ 1 }}", false),
            ("1;2", false),
            ("", false),
        ] {
            let p = Parameters {
                serial: Some(serial.into()),
                ..Parameters::default()
            };
            assert_eq!(inputs(&upgrade("1"), &p).is_ok(), ok, "{serial}");
        }
        let remembered = Parameters {
            stream: Some("{{ x }}".into()),
            ..Parameters::default()
        };
        assert!(inputs(&upgrade("1"), &remembered).is_err());
    }

    #[test]
    fn paths_are_made_absolute_and_a_remembered_relative_one_is_refused() {
        let flags = Common {
            inventory: Some("hosts.ini".into()),
            auth_file: Some("auth.json".into()),
            ..Common::default()
        };
        let abs = absolute_flags(&flags).expect("absolute");
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(
            abs.inventory,
            Some(cwd.join("hosts.ini").display().to_string())
        );
        assert_eq!(abs.auth_file, Some(cwd.join("auth.json")));
        let list = Common {
            inventory: Some("h1,h2".into()),
            ..Common::default()
        };
        assert_eq!(
            absolute_flags(&list).expect("list").inventory.as_deref(),
            Some("h1,h2")
        );
        let old = Parameters {
            inventory: Some("hosts.ini".into()),
            ..Parameters::default()
        };
        let err = inputs(&upgrade("1"), &old).expect_err("relative");
        assert!(err.to_string().contains("inventory"), "{err}");
    }

    #[test]
    fn a_killed_run_s_events_file_is_removed_and_nothing_else() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::write(d.path().join(".events-abc123"), "{}").expect("write");
        std::fs::write(d.path().join(crate::memory::FILE), "{}").expect("write");
        remove_stale_events(d.path());
        assert!(!d.path().join(".events-abc123").exists());
        assert!(d.path().join(crate::memory::FILE).exists());
    }

    #[test]
    fn a_state_dir_others_can_write_is_refused_and_a_new_one_is_0700() {
        let d = tempfile::tempdir().expect("tmp");
        let fresh = d.path().join("refitctl");
        make_state_dir(&fresh).expect("made");
        trusted_state_dir(&fresh).expect("trusted");
        let mode = std::fs::metadata(&fresh)
            .expect("stat")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = trusted_state_dir(&fresh).expect_err("open");
        assert!(err.to_string().contains("writable by others"), "{err}");
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::fs::write(fresh.join(crate::memory::FILE), "{}").expect("write");
        std::fs::set_permissions(
            fresh.join(crate::memory::FILE),
            std::fs::Permissions::from_mode(0o666),
        )
        .expect("chmod");
        assert!(trusted_state_dir(&fresh).is_err());
    }
}
