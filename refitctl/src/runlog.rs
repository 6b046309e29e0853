//! A log of every run, as obsah keeps one for foremanctl: one file per run under
//! /var/log/refit (or $REFITCTL_LOG_DIR) with the command line, ansible-playbook's output,
//! refitctl's summary and how it ended; the newest 20 are kept.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub const KEEP: usize = 20;
const DEFAULT_DIR: &str = "/var/log/refit";

/// The log of this run; writing to it never fails the run. Clones write to the same file (the
/// thread that passes ansible-playbook's output on writes it too).
#[derive(Clone, Default)]
pub struct RunLog {
    file: Arc<Mutex<Option<File>>>,
}

impl RunLog {
    /// Starts the log of a run of `command` with these arguments. A dir that cannot be written
    /// costs a warning, not the run: the operator may not be root.
    pub fn start(command: &str, args: &[String]) -> RunLog {
        let dir = std::env::var_os("REFITCTL_LOG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        match open(&dir, command) {
            Ok(file) => {
                let log = RunLog {
                    file: Arc::new(Mutex::new(Some(file))),
                };
                log.write(&format!(
                    "refitctl {} {}\nstarted {}\n",
                    env!("CARGO_PKG_VERSION"),
                    args.join(" "),
                    rfc3339(SystemTime::now())
                ));
                prune(&dir, KEEP);
                log
            }
            Err(e) => {
                eprintln!(
                    "refitctl: warning: no run log, {} cannot be written ({e}); set REFITCTL_LOG_DIR to a dir that can",
                    dir.display()
                );
                RunLog::default()
            }
        }
    }

    /// Appends text, colours stripped.
    pub fn write(&self, text: &str) {
        if let Ok(mut guard) = self.file.lock()
            && let Some(f) = guard.as_mut()
        {
            let _ = f.write_all(strip_ansi(text).as_bytes());
        }
    }

    pub fn end(&self, code: u8, why: &str) {
        self.write(&format!(
            "ended {}: exit {code}{}{why}\n",
            rfc3339(SystemTime::now()),
            if why.is_empty() { "" } else { ", " }
        ));
    }
}

fn open(dir: &Path, command: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let name = format!(
        "{}-{command}-{}.log",
        compact(SystemTime::now()),
        std::process::id()
    );
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        // Unit texts are in it, secrets masked; it is still the operator's alone.
        .mode(0o600)
        .open(dir.join(name))
}

/// Removes all but the newest `keep` run logs. Their names start with the UTC time, so the
/// order of the names is the order of the runs; files of other names are left alone.
pub fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_run_log)
        })
        .collect();
    logs.sort();
    let extra = logs.len().saturating_sub(keep);
    for old in &logs[..extra] {
        let _ = std::fs::remove_file(old);
    }
}

/// `20261202T034238.123Z-update-4242.log`
fn is_run_log(name: &str) -> bool {
    let b = name.as_bytes();
    name.ends_with(".log")
        && b.len() > 21
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && name[9..].contains("Z-")
}

/// The time as a log's name starts: `20261202T034238.123Z`, to the millisecond.
fn compact(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let c = refit_core::time::civil(d.as_secs());
    format!("{}.{:03}Z", c.compact(), d.subsec_millis())
}

/// `2026-12-02T03:42:38Z`
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    refit_core::time::rfc3339(d.as_secs())
}

/// Text without the terminal's colour codes (ESC [ ... letter).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_times() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_182_958_123);
        assert_eq!(rfc3339(t), "2026-12-02T03:42:38Z");
        assert_eq!(compact(t), "20261202T034238.123Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn the_newest_twenty_are_kept_and_nothing_else_is_touched() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        for i in 0..25 {
            let t = UNIX_EPOCH + Duration::from_secs(1_796_182_958 + i * 61);
            File::create(dir.path().join(format!("{}-update-1.log", compact(t))))?;
        }
        File::create(dir.path().join("notes.log"))?;
        prune(dir.path(), KEEP);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        left.sort();
        assert_eq!(left.len(), 21, "{left:?}");
        assert_eq!(
            left[0], "20261202T034743.000Z-update-1.log",
            "the 5 oldest went"
        );
        assert!(left.contains(&"notes.log".to_string()));
        Ok(())
    }

    #[test]
    fn colours_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[0;33mchanged\u{1b}[0m x\n"),
            "changed x\n"
        );
    }
}
