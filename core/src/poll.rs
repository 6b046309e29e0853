//! The pauses of a wait that looks at the host again and again. Most waits here end within a
//! few hundred milliseconds (a stop, a start, a first health check), and what a service's
//! clients see is the wait plus the time until the next look: so the looks come quickly at
//! first and slow down to a cap, which bounds what a long wait costs (each look is a
//! `systemctl show` or a podman call).

use std::time::Duration;

/// The first pause.
const FIRST: Duration = Duration::from_millis(10);

/// Pauses of 10, 20, 40... ms, each twice the last, up to `cap`.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    pub fn up_to(cap: Duration) -> Self {
        Backoff {
            next: FIRST.min(cap),
            cap,
        }
    }

    /// The pause before the next look.
    pub fn pause(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(self.cap);
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_ten_ms_and_stop_at_the_cap() {
        let mut b = Backoff::up_to(Duration::from_millis(100));
        let ms: Vec<u128> = (0..6).map(|_| b.pause().as_millis()).collect();
        assert_eq!(ms, [10, 20, 40, 80, 100, 100]);
    }

    #[test]
    fn a_cap_below_the_first_pause_is_the_pause() {
        let mut b = Backoff::up_to(Duration::from_millis(5));
        assert_eq!(
            (b.pause(), b.pause()),
            (Duration::from_millis(5), Duration::from_millis(5))
        );
    }
}
