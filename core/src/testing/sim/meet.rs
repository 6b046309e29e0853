//! A meeting point for stop jobs or one-off containers: each waits (a bounded, real time) until
//! `at` of them are under way together, so a test sees whether they can run at once, however
//! slowly the machine schedules its threads. Unset, nothing waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How long one waits for the others at most: the test then goes on, and `most` tells.
const PATIENCE: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct Meet {
    /// How many to wait for; 0, no waiting.
    pub at: usize,
    inside: Mutex<Count>,
    arrived: Condvar,
    /// The most that were under way together.
    pub most: AtomicUsize,
}

impl Meet {
    /// One under way until the returned guard drops: waits until `at` are, or `PATIENCE`.
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

/// How many are under way, and whether `at` of them ever were: one that arrived first waits on
/// the latter, since the others may have finished and left before it wakes.
#[derive(Default)]
struct Count {
    now: usize,
    met: bool,
}

/// One under way.
pub struct Inside<'a>(&'a Meet);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.inside.lock().expect("meet").now -= 1;
    }
}
