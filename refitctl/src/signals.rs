//! SIGINT and SIGTERM while ansible-playbook runs. The child runs in a process group of its
//! own, so a terminal's Ctrl-C reaches refitctl alone, and refitctl passes each signal on to the
//! whole group (ansible-playbook, its forks, their ssh), as a terminal would. refitctl itself
//! does not die of it: it keeps its lock until the child has exited, so no second refitctl can
//! start beside a run that is still stopping, and then exits 128 + the signal. Once the child
//! has exited, a signal has its default effect again: refitctl ends at once.

use rustix::process::{Pid, Signal};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// A signal that ended a run, and how refitctl then exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    Int,
    Term,
}

impl Interrupt {
    fn from_raw(raw: i32) -> Option<Interrupt> {
        match raw {
            SIGINT => Some(Interrupt::Int),
            SIGTERM => Some(Interrupt::Term),
            _ => None,
        }
    }

    /// 128 + the signal's number, as a shell reports a process the signal ended.
    pub fn code(self) -> u8 {
        match self {
            Interrupt::Int => 130,
            Interrupt::Term => 143,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Interrupt::Int => "SIGINT",
            Interrupt::Term => "SIGTERM",
        }
    }

    fn signal(self) -> Signal {
        match self {
            Interrupt::Int => Signal::INT,
            Interrupt::Term => Signal::TERM,
        }
    }
}

/// SIGINT and SIGTERM caught, before the child is spawned: one that arrives in between is
/// kept and passed on as soon as the child's group is known.
pub struct Armed {
    signals: Signals,
    child_gone: Arc<AtomicBool>,
}

impl Armed {
    pub fn new() -> std::io::Result<Armed> {
        let child_gone = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_default(signal, Arc::clone(&child_gone))?;
        }
        let signals = Signals::new([SIGINT, SIGTERM])?;
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
            let group = i32::try_from(group).ok().and_then(Pid::from_raw);
            let mut first = None;
            for interrupt in signals.forever().filter_map(Interrupt::from_raw) {
                first.get_or_insert(interrupt);
                if let Some(group) = group {
                    // The group is gone once every member has exited: nothing left to stop.
                    let _ = rustix::process::kill_process_group(group, interrupt.signal());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        for (raw, i) in [(SIGINT, Interrupt::Int), (SIGTERM, Interrupt::Term)] {
            assert_eq!(Interrupt::from_raw(raw), Some(i));
            assert_eq!(i32::from(i.code()), 128 + raw);
            assert_eq!(i.signal().as_raw(), raw);
        }
    }
}
