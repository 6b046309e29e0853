//! The listening sockets: those systemd passed (sd_listen_fds protocol: LISTEN_PID is this
//! process, LISTEN_FDS sockets from fd 3 on), else one on 127.0.0.1:$PORT.

#![allow(unsafe_code)]

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::time::Duration;

const FIRST_FD: RawFd = 3;

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    /// Non-blocking, so an accept after `readable` never hangs when another process sharing
    /// the socket (the next revision, in a restart) took the connection first.
    pub fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l) => l.set_nonblocking(true),
        }
    }

    /// Whether a connection waits, after at most `timeout`: a poll(2), so the accept loop
    /// wakes at once for a client and at least every `timeout` to look for a stop.
    pub fn readable(&self, timeout: Duration) -> bool {
        let fd = match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        };
        let mut pfd = PollFd {
            fd,
            events: POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd, owned by this frame for the length of the call.
        let n = unsafe { poll(&mut pfd, 1, ms) };
        n > 0 && pfd.revents & POLLIN != 0
    }
}

const POLLIN: i16 = 1;

#[repr(C)]
struct PollFd {
    fd: RawFd,
    events: i16,
    revents: i16,
}

unsafe extern "C" {
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
}

pub fn listeners(port: &str) -> std::io::Result<Vec<Listener>> {
    let inherited = inherited_count();
    if inherited == 0 {
        let listener = TcpListener::bind(format!("127.0.0.1:{port}"))?;
        return Ok(vec![Listener::Tcp(listener)]);
    }
    eprintln!("serving on {inherited} inherited socket(s)");
    (0..inherited)
        .map(|i| {
            // SAFETY: the protocol hands these fds to this process alone, open and listening;
            // each is taken once here and owned from now on.
            let fd = unsafe { OwnedFd::from_raw_fd(FIRST_FD + i) };
            classify(fd)
        })
        .collect()
}

fn inherited_count() -> i32 {
    let for_us = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        .is_some_and(|p| p == std::process::id());
    if !for_us {
        return 0;
    }
    std::env::var("LISTEN_FDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A TCP socket reports an inet address; anything else is taken as a unix socket.
fn classify(fd: OwnedFd) -> std::io::Result<Listener> {
    let tcp = TcpListener::from(fd);
    if tcp.local_addr().is_ok() {
        return Ok(Listener::Tcp(tcp));
    }
    let unix = UnixListener::from(OwnedFd::from(tcp));
    unix.local_addr()?;
    Ok(Listener::Unix(unix))
}
