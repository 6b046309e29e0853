//! A meeting point for stop jobs: each waits (a bounded, real time) until `at` of them are under
//! way together, so a test sees whether stops of separate sets can run at once. Unset, a stop
//! waits for nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How long a stop waits for the others at most: the test then goes on, and `most` tells.
const PATIENCE: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct Meet {
    /// How many stops to wait for; 0, no waiting.
    pub at: usize,
    inside: Mutex<Count>,
    arrived: Condvar,
    /// The most stops that were under way together.
    pub most: AtomicUsize,
}

impl Meet {
    /// One stop under way until the returned guard drops: waits until `at` are, or `PATIENCE`.
    pub fn enter(&self) -> Option<Inside<'_>> {
        if self.at == 0 {
            return None;
        }
        let mut inside = self.inside.lock().expect("meet");
        inside.now += 1;
        inside.met |= inside.now >= self.at;
        self.most.fetch_max(inside.now, Ordering::SeqCst);
        self.arrived.notify_all();
        let (inside, _) = self
            .arrived
            .wait_timeout_while(inside, PATIENCE, |count| !count.met)
            .expect("meet");
        drop(inside);
        Some(Inside(self))
    }
}

/// The stops under way, and whether `at` of them ever were: a stop that arrived first waits on
/// the latter, since the others may have finished and left before it wakes.
#[derive(Default)]
struct Count {
    now: usize,
    met: bool,
}

/// A stop under way.
pub struct Inside<'a>(&'a Meet);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.inside.lock().expect("meet").now -= 1;
    }
}
