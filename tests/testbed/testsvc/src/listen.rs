//! The listening sockets: those systemd passed (sd_listen_fds protocol: LISTEN_PID is this
//! process, LISTEN_FDS sockets from fd 3 on), else one on 127.0.0.1:$PORT.

#![allow(unsafe_code)]

use std::net::TcpListener;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;

const FIRST_FD: RawFd = 3;

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
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
