//! Running one of the collection's playbooks with ansible-playbook: where the collection is,
//! the inventory, the extra vars, and the progress callback whose events refitctl reads back.

use crate::error::CtlError;
use crate::events::{Ending, Run};
use crate::memory::Parameters;
use crate::runlog::RunLog;
use crate::signals::Armed;
use serde_json::{Map, Value};
use std::io::{BufRead, IsTerminal, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// One ansible-playbook run, as refitctl sets it up.
pub struct Invocation<'a> {
    /// `update`, `upgrade`, `deploy`, `status`, `rollback`: a playbook of the collection.
    pub playbook: &'a str,
    pub params: &'a Parameters,
    /// Extra vars beyond those the parameters give.
    pub extra: Map<String, Value>,
    pub check: bool,
    pub diff: bool,
    pub verbose: u8,
    /// Show ansible's progress as it happens; otherwise keep it for a failure.
    pub show_progress: bool,
    /// Show it on stderr: stdout is for the JSON that `--json` asked for.
    pub progress_to_stderr: bool,
    /// Copy the run's events to stdout as they come (`--json` of a run that changes things).
    pub follow_events: bool,
    /// ansible-playbook's `--limit`.
    pub limit: Option<&'a str>,
    pub state_dir: &'a Path,
    /// Gets ansible-playbook's command line and everything it printed.
    pub log: &'a RunLog,
}

impl Invocation<'_> {
    pub fn run(&self) -> Result<Run, CtlError> {
        let deployment = self
            .params
            .deployment
            .as_ref()
            .ok_or(CtlError::NoDeploymentGiven)?;
        if !deployment.is_file() {
            return Err(CtlError::NoDeployment(deployment.clone()));
        }
        crate::deployment::check(deployment)?;
        let inventory = self.inventory()?;
        let events = tempfile::Builder::new()
            .prefix(crate::guard::EVENTS_PREFIX)
            .tempfile_in(self.state_dir)
            .map_err(|e| CtlError::StateDir {
                path: self.state_dir.to_path_buf(),
                source: e,
            })?;

        let mut cmd = Command::new(ansible_playbook());
        cmd.arg(format!("refit.containers.{}", self.playbook))
            .arg("-i")
            .arg(&inventory)
            .arg("-e")
            .arg(format!("@{}", deployment.display()))
            .arg("-e")
            .arg(Value::Object(self.extra_vars()).to_string())
            .env("ANSIBLE_STDOUT_CALLBACK", "refit.containers.progress")
            .env("REFIT_EVENTS_FILE", events.path())
            .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            // A group of its own: a signal reaches it through refitctl alone (signals.rs).
            .process_group(0);
        if let Some(path) = self.checkout_collections()? {
            cmd.env("ANSIBLE_COLLECTIONS_PATH", path);
        }
        if self.check {
            cmd.arg("--check");
        }
        if self.diff {
            cmd.arg("--diff");
        }
        if let Some(limit) = self.limit {
            cmd.arg("--limit").arg(limit);
        }
        if self.verbose > 0 {
            cmd.arg(format!("-{}", "v".repeat(self.verbose.into())));
        }
        // The progress passes through refitctl, for the log; ansible would drop its colours
        // for a pipe, and the log drops them instead.
        cmd.stdout(Stdio::piped());
        if self.show_progress && self.shown_on_a_terminal() && colours_allowed() {
            cmd.env("ANSIBLE_FORCE_COLOR", "1");
        }
        tracing::debug!(?cmd, "running");
        self.log.write(&format!(
            "$ {}\n",
            std::iter::once(cmd.get_program())
                .chain(cmd.get_args())
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        ));
        let armed = Armed::new().map_err(CtlError::Signals)?;
        let mut child = cmd.spawn().map_err(CtlError::NoAnsible)?;
        let forwarder = armed.forward_to(child.id());
        let follower = self
            .follow_events
            .then(|| crate::follow::Follower::start(events.path().to_path_buf()));
        // stdout (when kept) and stderr are read on their own threads, so neither pipe fills.
        let out = child
            .stdout
            .take()
            .map(|o| tee(o, self.log.clone(), self.shown()));
        let err = child.stderr.take().map(drain);
        let status = child.wait();
        let interrupt = forwarder.stop();
        if let Some(f) = follower {
            f.finish();
        }
        let status = status.map_err(CtlError::NoAnsible)?;
        let stdout = out.map(join).unwrap_or_default();
        let stderr = err.map(join).unwrap_or_default();
        self.log.write(&stderr);
        if let Some(interrupt) = interrupt {
            crate::signals::wait_for_group_end(child.id(), Duration::from_secs(10));
            eprint!("{stderr}");
            return Err(CtlError::Interrupted(interrupt));
        }
        let text = std::fs::read_to_string(events.path()).unwrap_or_default();
        let run = Run::parse(&text);
        if run.stats.is_none() && !status.success() {
            return Err(ansible_error(&stderr));
        }
        // Ansible's warnings and deprecations; the progress lines are on stdout.
        eprint!("{stderr}");
        if !self.show_progress && (self.verbose > 0 || matches!(run.ending(), Ending::Failed(_))) {
            eprint!("{stdout}");
        }
        Ok(run)
    }

    /// Where the progress is shown as it comes, if it is.
    fn shown(&self) -> Option<Shown> {
        match (self.show_progress, self.progress_to_stderr) {
            (false, _) => None,
            (true, false) => Some(Shown::Stdout),
            (true, true) => Some(Shown::Stderr),
        }
    }

    fn shown_on_a_terminal(&self) -> bool {
        if self.progress_to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        }
    }

    fn extra_vars(&self) -> Map<String, Value> {
        let p = self.params;
        let mut vars = Map::new();
        vars.insert("refit_offline".into(), p.offline.into());
        if let Some(a) = &p.image_archive {
            vars.insert("refit_image_archive".into(), a.display().to_string().into());
        }
        if let Some(a) = &p.auth_file {
            vars.insert("refit_auth_file".into(), a.display().to_string().into());
        }
        if let Some(s) = &p.serial {
            vars.insert("refit_serial".into(), s.clone().into());
        }
        if let Some(s) = &p.stream {
            vars.insert("refit_stream".into(), s.clone().into());
        }
        vars.extend(self.extra.clone());
        vars
    }

    /// The inventory to pass: the one given (a file must exist), or this host over the local
    /// connection.
    fn inventory(&self) -> Result<String, CtlError> {
        match &self.params.inventory {
            Some(i) if i.contains(',') => Ok(i.clone()),
            Some(i) if Path::new(i).exists() => Ok(i.clone()),
            Some(i) => Err(CtlError::NoInventory(i.clone())),
            None => {
                let path = self.state_dir.join("localhost.ini");
                refit_core::state::atomic_write(
                    &path,
                    b"# refitctl's default inventory: this host, over the local connection.\n\
                      localhost ansible_connection=local\n",
                    0o644,
                )?;
                Ok(path.display().to_string())
            }
        }
    }

    /// When refitctl runs from a checkout with its modules built, the checkout is the
    /// collection: a link to it under the state dir goes first on the collections path.
    fn checkout_collections(&self) -> Result<Option<String>, CtlError> {
        let Some(repo) = checkout() else {
            return Ok(None);
        };
        let root = self.state_dir.join("collections");
        let ns = root.join("ansible_collections/refit");
        std::fs::create_dir_all(&ns).map_err(|e| CtlError::StateDir {
            path: ns.clone(),
            source: e,
        })?;
        let link = ns.join("containers");
        if std::fs::read_link(&link).ok().as_deref() != Some(repo.as_path()) {
            let tmp = ns.join(".containers.tmp");
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&repo, &tmp)
                .and_then(|()| std::fs::rename(&tmp, &link))
                .map_err(|e| CtlError::StateDir {
                    path: link.clone(),
                    source: e,
                })?;
        }
        let rest = std::env::var("ANSIBLE_COLLECTIONS_PATH")
            .unwrap_or_else(|_| "~/.ansible/collections:/usr/share/ansible/collections".into());
        Ok(Some(format!("{}:{rest}", root.display())))
    }
}

pub fn ansible_playbook() -> String {
    std::env::var("REFITCTL_ANSIBLE_PLAYBOOK").unwrap_or_else(|_| "ansible-playbook".into())
}

/// The checkout refitctl was built in, if its modules are built there too.
pub fn checkout() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .find(|d| {
            std::fs::read_to_string(d.join("galaxy.yml")).is_ok_and(|g| {
                g.lines().any(|l| l.trim() == "namespace: refit")
                    && g.lines().any(|l| l.trim() == "name: containers")
            })
        })
        .filter(|d| d.join("plugins/modules/container_unit").is_file())
        .map(Path::to_path_buf)
}

/// ansible-playbook's own complaint, as one line.
fn ansible_error(stderr: &str) -> CtlError {
    if stderr.contains("refit.containers") && stderr.contains("could not be found") {
        return CtlError::NoCollection;
    }
    let line = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ERROR") || l.starts_with("[ERROR]"))
        .or_else(|| stderr.lines().map(str::trim).rfind(|l| !l.is_empty()))
        .unwrap_or("no output");
    CtlError::Ansible(line.to_string())
}

/// The colours ansible would use on a terminal, unless they were turned off.
fn colours_allowed() -> bool {
    ["NO_COLOR", "ANSIBLE_NOCOLOR", "ANSIBLE_FORCE_COLOR"]
        .iter()
        .all(|v| std::env::var_os(v).is_none())
}

#[derive(Clone, Copy)]
enum Shown {
    Stdout,
    Stderr,
}

/// Reads ansible-playbook's stdout line by line: each line to the log, and shown at once when
/// `shown` says where; the whole of it is kept for a failure.
fn tee<R: Read + Send + 'static>(
    r: R,
    log: RunLog,
    shown: Option<Shown>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = String::new();
        let mut reader = std::io::BufReader::new(r);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let text = String::from_utf8_lossy(&line);
            log.write(&text);
            // A closed terminal or pipe is not worth stopping the run over.
            let _ = match shown {
                Some(Shown::Stdout) => std::io::stdout().lock().write_all(&line),
                Some(Shown::Stderr) => std::io::stderr().lock().write_all(&line),
                None => {
                    kept.push_str(&text);
                    Ok(())
                }
            };
            line.clear();
        }
        kept
    })
}

fn drain<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

fn join(h: std::thread::JoinHandle<String>) -> String {
    h.join().unwrap_or_default()
}
