//! SIGTERM handling without a libc crate. As PID 1 of its container the process gets no
//! signal it has no handler for, so without one every `podman stop` would wait out its 10 s
//! timeout and end in SIGKILL.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

const SIGTERM: i32 = 15;

static TERMINATING: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    fn _exit(status: i32) -> !;
}

extern "C" fn exit_now(_: i32) {
    // SAFETY: _exit is async-signal-safe; nothing needs flushing (responses are written whole).
    unsafe { _exit(0) }
}

extern "C" fn note_term(_: i32) {
    // An atomic store is async-signal-safe; the accept loops look at it between polls.
    TERMINATING.store(true, Ordering::SeqCst);
}

extern "C" fn do_nothing(_: i32) {}

/// A stop ends the process at once with status 0 (the modes that serve nothing).
pub fn exit_on_term() {
    // SAFETY: the handler only calls _exit, which is async-signal-safe.
    unsafe { signal(SIGTERM, exit_now) };
}

/// A stop is noted, for a graceful shutdown: the server stops accepting and answers the
/// connections it has before it exits, as a production server does. Killing it mid-answer
/// instead would reset a client that a socket-activated restart must not fail.
pub fn drain_on_term() {
    // SAFETY: the handler only stores to an atomic.
    unsafe { signal(SIGTERM, note_term) };
}

/// Whether a SIGTERM has arrived since `drain_on_term`.
pub fn terminating() -> bool {
    TERMINATING.load(Ordering::SeqCst)
}

/// A stop is caught and ignored (the "stubborn" mode).
pub fn ignore_term() {
    // SAFETY: the handler does nothing.
    unsafe { signal(SIGTERM, do_nothing) };
}
