//! The run lock: an flock on `STATE_DIR/lock`, which names its holder so a second run can say
//! who is in the way. The kernel drops the lock when the holder dies, so a killed run never
//! leaves a stale lock.
//!
//! A lock that is held is waited for, briefly (`patience`): a second controller's preflight
//! takes it for the milliseconds it needs to refuse, and a live run's next module must not
//! fail for meeting that refusal in the gap between two of its phases. A holder at real work
//! keeps it for longer than the patience, and the caller is refused with the holder named.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a held lock is tried again while waiting for it.
const RETRY: Duration = Duration::from_millis(10);

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another refit run holds the lock {path} ({holder}); wait for it to finish, then run again"
    )]
    Held { path: PathBuf, holder: String },
    #[error(
        "the lock {0} is a symlink or not a plain file; refit does not follow it: remove it and run again"
    )]
    Symlink(PathBuf),
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Held for as long as it lives: while it is, a flow's run counts as live (flow/lease.rs).
#[derive(Debug)]
pub struct Lock {
    /// The flock lasts as long as this open file (and any child it is shared with).
    file: File,
    /// Another holder had it first: what was read of the host before may have changed.
    waited: bool,
}

impl Lock {
    /// Takes the lock, waiting at most `patience` while another process holds it.
    pub fn acquire(path: &Path, holder: &str, patience: Duration) -> Result<Lock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Never through a symlink (O_NOFOLLOW fails on one with ELOOP), created 0600, and only
        // a plain file: the holder's note is rewritten in place.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                    LockError::Symlink(path.to_path_buf())
                }
                _ => io(e),
            })?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(LockError::Symlink(path.to_path_buf()));
        }
        let deadline = Instant::now() + patience;
        let mut waited = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    waited = true;
                    std::thread::sleep(RETRY);
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        path: path.to_path_buf(),
                        holder: holder_note(&mut file),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        // The lock file's content is only a note on who holds it, so it is rewritten in place:
        // the inode must stay the one that is locked.
        let note = format!(
            "{holder}, pid {}, since {}",
            std::process::id(),
            crate::time::now_rfc3339()
        );
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(note.as_bytes()).map_err(io)?;
        Ok(Lock { file, waited })
    }

    /// Lets every child started from now on inherit the locked file, so the lock is held
    /// until the last of them ends too: a holder killed outright leaves its child's work
    /// covered. (An flock belongs to the open file, which the children share.)
    pub fn share_with_children(&self) -> Result<(), LockError> {
        rustix::io::fcntl_setfd(&self.file, rustix::io::FdFlags::empty()).map_err(|e| {
            LockError::Io {
                path: PathBuf::from("the lock's file descriptor"),
                source: e.into(),
            }
        })
    }

    /// Whether another holder had the lock when this one asked for it.
    pub fn waited(&self) -> bool {
        self.waited
    }
}

/// Who holds the lock, from the note its holder writes just after taking it.
fn holder_note(file: &mut File) -> String {
    let mut note = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut note));
    match note.trim() {
        "" => "a refit module that is just starting".to_string(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_lock_is_held_by_the_child_after_its_holder_let_go() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("lock");
        let first = Lock::acquire(&p, "refitctl update", Duration::ZERO).expect("first");
        first.share_with_children().expect("share");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        // The holder is gone, as a SIGKILLed refitctl is; its child still works.
        drop(first);
        let held = Lock::acquire(&p, "refitctl update", Duration::ZERO);
        let _ = child.kill();
        let _ = child.wait();
        assert!(matches!(held, Err(LockError::Held { .. })), "{held:?}");
        // Patient: a child another test thread started while the fd was inheritable holds it
        // too, until that child ends (cargo runs the tests of this process side by side).
        Lock::acquire(&p, "refitctl update", Duration::from_secs(10))
            .expect("free once the child ended");
    }

    #[test]
    fn a_second_holder_is_refused_with_the_first_named() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("lock");
        let _first = Lock::acquire(&p, "container_unit hello", Duration::ZERO).expect("first");
        let t0 = Instant::now();
        let err =
            Lock::acquire(&p, "update", Duration::from_millis(100)).expect_err("second must fail");
        assert!(err.to_string().contains("container_unit hello"), "{err}");
        assert!(
            t0.elapsed() >= Duration::from_millis(100),
            "it waited its patience"
        );
    }

    #[test]
    fn a_lock_released_within_the_patience_is_taken() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("lock");
        let first = Lock::acquire(&p, "flow_state refusing", Duration::ZERO).expect("first");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(first);
        });
        let second = Lock::acquire(&p, "container_unit content", Duration::from_secs(5));
        release.join().expect("release");
        let second = second.expect("taken once the first let go");
        assert!(second.waited(), "it knows another held the lock first");
        let note = std::fs::read_to_string(&p).expect("note");
        assert!(note.starts_with("container_unit content, pid "), "{note}");
        drop(second);
        let third = Lock::acquire(&p, "flow_state", Duration::ZERO).expect("free");
        assert!(!third.waited());
    }

    #[test]
    fn a_symlinked_lock_file_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().expect("tempdir");
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").expect("victim");
        let p = d.path().join("lock");
        std::os::unix::fs::symlink(&victim, &p).expect("link");
        let err =
            Lock::acquire(&p, "update", Duration::ZERO).expect_err("a symlink must be refused");
        assert!(matches!(err, LockError::Symlink(_)), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    }
}
