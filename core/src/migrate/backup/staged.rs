//! A backup made ready while its services still serve: its directory made and its container
//! created, so that once they stopped only the dump itself runs before the migration.

use super::{
    Backup, BackupError, For, Listed, RECORD, Site, Taken, container_of, list_path, new_dir, prune,
    size_of,
};
use crate::podman::{Ended, Guard, Podman};
use crate::state::{narrow_tree, read_json, write_json};
use std::path::PathBuf;
use std::time::Instant;

/// A backup ready to be taken: dropped untaken, its container and its empty directory go.
pub struct Staged<'a> {
    backup: &'a Backup,
    taken: Taken,
    container: Guard<'a, dyn Podman + 'a>,
    dir: UnusedDir,
    stream_dir: PathBuf,
}

/// A backup's directory, removed when dropped unless a dump ran into it: a failed dump's
/// directory stays for a look.
struct UnusedDir {
    path: PathBuf,
    used: bool,
}

impl Drop for UnusedDir {
    fn drop(&mut self) {
        if self.used {
            return;
        }
        // Only reached on a path that already fails: its error is the one to report.
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), error = %e, "unused backup directory not removed");
        }
    }
}

/// Makes the backup for the migration `origin` ready: its directory in its stream, and its
/// container created. Nothing runs yet; a failure here comes before anything stopped.
pub fn stage<'a>(b: &'a Backup, origin: &For, site: &Site<'a>) -> Result<Staged<'a>, BackupError> {
    let stream_dir = site.state.ensure_backups(&b.stream)?;
    let dir = UnusedDir {
        path: new_dir(&stream_dir, origin.source)?,
        used: false,
    };
    let taken = Taken {
        source: origin.source.to_string(),
        stream: b.stream.clone(),
        dir: dir.path.display().to_string(),
        image: b.image.clone(),
        volumes: b.volumes.clone(),
        network: b.network.clone(),
        env: b.env_names(),
        restore_command: b.restore_command.clone(),
        created_at: String::new(),
        duration_ms: 0,
        size_bytes: 0,
    };
    let spec = container_of(&taken, &b.env_words(), b.command.clone(), "backup");
    let podman: &'a dyn Podman = site.host.podman;
    let container = Guard::new(podman, podman.prepare_oneoff(&spec)?);
    Ok(Staged {
        backup: b,
        taken,
        container,
        dir,
        stream_dir,
    })
}

impl Staged<'_> {
    /// Takes the backup, its services stopped: runs the dump, records it, lists it for the
    /// run's recovery (holding `listing` for that) and prunes its stream.
    pub fn take(
        mut self,
        origin: &For,
        site: &Site,
        listing: &std::sync::Mutex<()>,
    ) -> Result<Taken, BackupError> {
        let t0 = Instant::now();
        let _step =
            crate::progress::step(format!("backing up {}", origin.source), Some(site.timeout));
        self.taken.created_at = crate::time::now_rfc3339();
        let ended = site
            .host
            .podman
            .run_prepared(self.container.prepared(), site.timeout)?;
        self.dir.used = true;
        let rc = match ended {
            Ended::Exited { rc } => rc,
            Ended::TimedOut => {
                return Err(BackupError::Timeout {
                    what: format!("{}: the backup of {}", self.taken.source, self.taken.dir),
                    secs: site.timeout.as_secs(),
                });
            }
        };
        // The dump's output only explains a failure: a success does not wait to read it.
        let tail = (rc != 0).then(|| {
            crate::migrate::tail(&site.host.podman.oneoff_output(self.container.prepared()))
        });
        self.container.remove()?;
        let Staged {
            backup,
            mut taken,
            dir,
            stream_dir,
            ..
        } = self;
        // The tool wrote under its own umask (pg_dump: 0644); the dump is root's alone.
        narrow_tree(&dir.path)?;
        if rc != 0 {
            return Err(BackupError::BackupFailed {
                source_name: origin.source.to_string(),
                rc,
                dir: taken.dir,
                tail: tail.unwrap_or_default(),
            });
        }
        taken.size_bytes = size_of(&dir.path);
        taken.duration_ms = t0.elapsed().as_millis() as u64;
        write_json(&dir.path.join(RECORD), &taken, 0o600)?;
        // Backups of migrations running at once are listed one at a time: each reads, adds to
        // and writes the one list.
        let _listing = listing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let list_file = list_path(site.state, site.record);
        let mut list: Vec<Listed> = read_json(&list_file)?.unwrap_or_default();
        list.push(Listed {
            taken: taken.clone(),
            stamp: origin.stamp.to_path_buf(),
            migration: origin.migration.to_string(),
        });
        write_json(&list_file, &list, 0o600)?;
        prune(&stream_dir, backup.keep, &list)?;
        Ok(taken)
    }
}
