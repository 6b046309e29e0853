//! The signals that end a job (SIGINT, SIGTERM, and SIGHUP and SIGQUIT, which a terminal sends
//! too) while ansible-playbook runs. The child runs in a process group of its own, so a
//! terminal's Ctrl-C reaches refitctl alone, and refitctl passes each signal on to the whole
//! group (ansible-playbook, its forks, their ssh), as a terminal would. refitctl itself does not
//! die of it: it keeps its lock until the child has exited, so no second refitctl can start
//! beside a run that is still stopping, and then exits 128 + the signal. Once the child has
//! exited, a signal has its default effect again: refitctl ends at once.

use rustix::process::{Pid, Signal};
use signal_hook::iterator::{Handle, Signals};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What refitctl catches and passes on. SIGHUP and SIGQUIT too: a terminal sends them to its
/// foreground group, which the child is no longer in.
const CAUGHT: [(Signal, &str); 4] = [
    (Signal::HUP, "SIGHUP"),
    (Signal::INT, "SIGINT"),
    (Signal::QUIT, "SIGQUIT"),
    (Signal::TERM, "SIGTERM"),
];

fn caught() -> impl Iterator<Item = i32> {
    CAUGHT.iter().map(|(s, _)| s.as_raw())
}

/// A signal that ended a run, and how refitctl then exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupt(Signal);

impl Interrupt {
    fn from_raw(raw: i32) -> Option<Interrupt> {
        CAUGHT
            .iter()
            .find(|(s, _)| s.as_raw() == raw)
            .map(|(s, _)| Interrupt(*s))
    }

    /// 128 + the signal's number, as a shell reports a process the signal ended.
    pub fn code(self) -> u8 {
        u8::try_from(128 + self.0.as_raw()).unwrap_or(u8::MAX)
    }

    pub fn name(self) -> &'static str {
        CAUGHT
            .iter()
            .find(|(s, _)| *s == self.0)
            .map_or("a signal", |(_, name)| name)
    }
}

/// The signals caught, before the child is spawned: one that arrives in between is kept and
/// passed on as soon as the child's group is known.
pub struct Armed {
    signals: Signals,
    child_gone: Arc<AtomicBool>,
}

impl Armed {
    pub fn new() -> std::io::Result<Armed> {
        let child_gone = Arc::new(AtomicBool::new(false));
        for signal in caught() {
            signal_hook::flag::register_conditional_default(signal, Arc::clone(&child_gone))?;
        }
        let signals = Signals::new(caught())?;
        Ok(Armed {
            signals,
            child_gone,
        })
    }

    /// Passes every signal caught from now on to the process group `group`, until `stop`.
    pub fn forward_to(self, group: u32) -> Forwarder {
        let Armed {
            mut signals,
            child_gone,
        } = self;
        let handle = signals.handle();
        let thread = std::thread::spawn(move || {
            let group = group_pid(group);
            let mut first = None;
            for interrupt in signals.forever().filter_map(Interrupt::from_raw) {
                first.get_or_insert(interrupt);
                if let Some(group) = group {
                    // The group is gone once every member has exited: nothing left to stop.
                    let _ = rustix::process::kill_process_group(group, interrupt.0);
                }
            }
            first
        });
        Forwarder {
            handle,
            thread,
            child_gone,
        }
    }
}

/// Passing signals on to a child's group, on a thread of its own.
pub struct Forwarder {
    handle: Handle,
    thread: JoinHandle<Option<Interrupt>>,
    child_gone: Arc<AtomicBool>,
}

impl Forwarder {
    /// Stops forwarding, once the child has exited; the first signal caught, if any.
    pub fn stop(self) -> Option<Interrupt> {
        self.child_gone.store(true, Ordering::SeqCst);
        self.handle.close();
        self.thread.join().unwrap_or(None)
    }
}

/// The process group a child leads, by the child's id.
fn group_pid(group: u32) -> Option<Pid> {
    i32::try_from(group).ok().and_then(Pid::from_raw)
}

/// Waits until no process is left in the group `group` (the child's forks and their ssh leave
/// a moment after it), `patience` at most, then kills what is left and waits a little more.
/// Only then has "ansible-playbook stopped": a member left behind would still hold refitctl's
/// lock, which its children inherit, and refuse the rerun the message asks for.
pub fn wait_for_group_end(group: u32, patience: Duration) {
    let Some(group) = group_pid(group) else {
        return;
    };
    let gone = || rustix::process::test_kill_process_group(group).is_err();
    let wait = |bound: Duration| {
        let until = Instant::now() + bound;
        while !gone() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        gone()
    };
    if !wait(patience) {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
        wait(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        for (raw, code, name) in [
            (1, 129, "SIGHUP"),
            (2, 130, "SIGINT"),
            (3, 131, "SIGQUIT"),
            (15, 143, "SIGTERM"),
        ] {
            let i = Interrupt::from_raw(raw).expect("caught");
            assert_eq!((i.code(), i.name()), (code, name));
        }
        assert_eq!(Interrupt::from_raw(10), None, "SIGUSR1 is not caught");
    }

    /// A process group whose leader, `sh -c SCRIPT`, has exited and been reaped, while what
    /// SCRIPT started in the background runs on.
    fn group_left_by(script: &str) -> (u32, Pid) {
        use std::os::unix::process::CommandExt;
        let mut leader = std::process::Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .spawn()
            .expect("sh");
        let group = leader.id();
        leader.wait().expect("leader ends first");
        (group, group_pid(group).expect("pid"))
    }

    #[test]
    fn a_group_is_waited_for_until_its_last_member_ends() {
        // The member lives 2 s, long enough to be seen running on a loaded machine, and leaves
        // a note of its own end: the group ended by itself, not by the kill after the patience.
        let d = tempfile::tempdir().expect("tempdir");
        let ended = d.path().join("ended");
        let (group, group_pid) =
            group_left_by(&format!("sleep 2 && touch '{}' & exit 0", ended.display()));
        assert!(
            rustix::process::test_kill_process_group(group_pid).is_ok(),
            "its member is still running"
        );
        let t0 = Instant::now();
        wait_for_group_end(group, Duration::from_secs(60));
        assert!(rustix::process::test_kill_process_group(group_pid).is_err());
        assert!(
            ended.exists(),
            "the member was killed instead of waited for"
        );
        assert!(t0.elapsed() < Duration::from_secs(50), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_member_that_outstays_the_patience_is_killed() {
        let (group, group_pid) = group_left_by("sleep 60 & exit 0");
        let t0 = Instant::now();
        wait_for_group_end(group, Duration::from_millis(200));
        // The killed member stays a zombie, still in its group, until PID 1 reaps it, which a
        // loaded machine can put off past the 2 s the wait allows after the kill; alive, it
        // would sleep for a minute.
        let deadline = Instant::now() + Duration::from_secs(30);
        while rustix::process::test_kill_process_group(group_pid).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(rustix::process::test_kill_process_group(group_pid).is_err());
        assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
    }
}
