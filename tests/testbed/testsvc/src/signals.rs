//! SIGTERM handling without a libc crate. As PID 1 of its container the process gets no
//! signal it has no handler for, so without one every `podman stop` would wait out its 10 s
//! timeout and end in SIGKILL.

#![allow(unsafe_code)]

const SIGTERM: i32 = 15;

unsafe extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    fn _exit(status: i32) -> !;
}

extern "C" fn exit_now(_: i32) {
    // SAFETY: _exit is async-signal-safe; nothing needs flushing (responses are written whole).
    unsafe { _exit(0) }
}

extern "C" fn do_nothing(_: i32) {}

/// A stop ends the process at once with status 0.
pub fn exit_on_term() {
    // SAFETY: the handler only calls _exit, which is async-signal-safe.
    unsafe { signal(SIGTERM, exit_now) };
}

/// A stop is caught and ignored (the "stubborn" mode).
pub fn ignore_term() {
    // SAFETY: the handler does nothing.
    unsafe { signal(SIGTERM, do_nothing) };
}
