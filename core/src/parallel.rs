//! Independent work on many items at once, a bounded number at a time, with the answers in the
//! items' order. Each item's work is a few round trips to podman, systemd or a registry, so a
//! thread each, joined per batch, is all the scheduling it needs.

/// `f` applied to every item, at most `width` at once; the answers in the items' order. A
/// panic in `f` is resumed on the caller's thread.
pub fn map<T: Send, R: Send>(items: Vec<T>, width: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    // One item needs no thread (a module converging one unit is the common call).
    if items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    let f = &f;
    let mut out = Vec::with_capacity(items.len());
    let mut rest = items.into_iter().peekable();
    while rest.peek().is_some() {
        let batch: Vec<T> = rest.by_ref().take(width.max(1)).collect();
        std::thread::scope(|s| {
            let running: Vec<_> = batch
                .into_iter()
                .map(|item| s.spawn(move || f(item)))
                .collect();
            for h in running {
                out.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
        });
    }
    out
}

/// `a` and `b` at once, `b` on the caller's thread: a process start beside a few socket calls,
/// say. A panic in `a` is resumed on the caller's thread.
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|s| {
        let a = s.spawn(a);
        let b = b();
        (a.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), b)
    })
}

/// One item a walk finished: its index among the items, and `f`'s answer.
pub struct Walked<R> {
    pub index: usize,
    pub answer: R,
}

/// Lets an item's work release the items that depend on it before it has finished: a unit
/// that serves while its `min_healthy_time` hold goes on, say.
pub struct Release<R> {
    index: usize,
    tx: std::sync::mpsc::Sender<Message<R>>,
}

impl<R> Release<R> {
    /// The items waiting for this one may start. Said again, or followed by an answer that
    /// `go_on` accepts, it changes nothing more.
    pub fn now(&self) {
        // The receiver lives until every thread answered: a send cannot fail.
        let _ = self.tx.send(Message::Released(self.index));
    }

    /// This item's answer will be one `go_on` refuses: nothing more starts from now, as on that
    /// answer, while the item finishes its work (a rollback, say).
    pub fn refused(&self) {
        let _ = self.tx.send(Message::Refused);
    }
}

/// What a walk's thread tells it.
enum Message<R> {
    Released(usize),
    Refused,
    Answered(usize, std::thread::Result<R>),
}

/// `f` applied to every item once the items it depends on (`deps[i]`, indices of items) have
/// finished with an answer `go_on` accepts, at most `width` at once: a walk of a dependency
/// graph. The first answer `go_on` refuses starts nothing more; what runs then still finishes.
/// Answers come in the order they finished; items never started are left out. Indices in
/// `deps` that are out of range or the item itself are ignored, and a cycle is never entered:
/// its items are left out. A panic in `f` is resumed on the caller's thread.
pub fn walk<T: Send, R: Send>(
    items: Vec<T>,
    deps: &[Vec<usize>],
    width: usize,
    f: impl Fn(T) -> R + Sync,
    go_on: impl Fn(&R) -> bool,
) -> Vec<Walked<R>> {
    walk_releasing(items, deps, width, |item, _| f(item), go_on)
}

/// [`walk`], where an item's work may also release its dependents early through its
/// [`Release`]: they start then, beside the rest of its work. A refused answer after that still
/// starts nothing more, and what was released and is running finishes.
pub fn walk_releasing<T: Send, R: Send>(
    items: Vec<T>,
    deps: &[Vec<usize>],
    width: usize,
    f: impl Fn(T, &Release<R>) -> R + Sync,
    go_on: impl Fn(&R) -> bool,
) -> Vec<Walked<R>> {
    let n = items.len();
    let mut graph = Graph::new(deps, n);
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    let f = &f;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut running = 0usize;
        let mut stopped = false;
        loop {
            while !stopped && running < width.max(1) {
                let Some(item) = graph
                    .ready
                    .pop_front()
                    .and_then(|i| Some((i, slots[i].take()?)))
                else {
                    break;
                };
                let tx = tx.clone();
                running += 1;
                s.spawn(move || {
                    let (index, item) = item;
                    let release = Release {
                        index,
                        tx: tx.clone(),
                    };
                    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        f(item, &release)
                    }));
                    // The receiver lives until every thread answered: a send cannot fail.
                    let _ = tx.send(Message::Answered(index, answer));
                });
            }
            if running == 0 {
                break;
            }
            let Ok(message) = rx.recv() else {
                break;
            };
            let (index, answer) = match message {
                Message::Released(index) => {
                    graph.release(index);
                    continue;
                }
                Message::Refused => {
                    stopped = true;
                    continue;
                }
                Message::Answered(index, answer) => (index, answer),
            };
            running -= 1;
            let answer = answer.unwrap_or_else(|p| std::panic::resume_unwind(p));
            if go_on(&answer) {
                graph.release(index);
            } else {
                stopped = true;
            }
            out.push(Walked { index, answer });
        }
    });
    out
}

/// A walk's bookkeeping: how many items each one still waits for, who waits for it, and which
/// items are ready to start.
struct Graph {
    waiting: Vec<usize>,
    dependents: Vec<Vec<usize>>,
    released: Vec<bool>,
    ready: std::collections::VecDeque<usize>,
}

impl Graph {
    fn new(deps: &[Vec<usize>], n: usize) -> Self {
        let mut waiting = vec![0usize; n];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, on) in deps.iter().enumerate().take(n) {
            let on: std::collections::BTreeSet<usize> =
                on.iter().copied().filter(|&j| j < n && j != i).collect();
            waiting[i] = on.len();
            for j in on {
                dependents[j].push(i);
            }
        }
        let ready = (0..n).filter(|&i| waiting[i] == 0).collect();
        Graph {
            waiting,
            dependents,
            released: vec![false; n],
            ready,
        }
    }

    /// The items that waited for `index` wait for it no more; once only.
    fn release(&mut self, index: usize) {
        if std::mem::replace(&mut self.released[index], true) {
            return;
        }
        for &k in &self.dependents[index] {
            self.waiting[k] -= 1;
            if self.waiting[k] == 0 {
                self.ready.push_back(k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Waits, at most 10 s of real time, until `cond` holds: a loaded machine may start a
    /// thread late, so a test meets the other thread instead of guessing its pace.
    fn until(cond: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !cond() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn answers_keep_the_items_order_and_no_more_than_width_run_at_once() {
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let out = map((0..10).collect(), 3, |i: u64| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            // The first two meet, however late either starts: run one at a time, they never
            // do, and `most` stays 1.
            if i < 2 {
                until(|| most.load(Ordering::SeqCst) >= 2);
            }
            // Later items finish first: the order of answers must not follow finishing.
            std::thread::sleep(Duration::from_millis(20 - 2 * i));
            now.fetch_sub(1, Ordering::SeqCst);
            i * i
        });
        assert_eq!(out, (0..10).map(|i| i * i).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
        assert!(most.load(Ordering::SeqCst) > 1, "it ran in parallel");
    }

    #[test]
    fn join_runs_both_at_once_and_keeps_their_answers_apart() {
        let both = std::sync::Barrier::new(2);
        // Each waits for the other: run one after the other, this would never return.
        let (a, b) = join(
            || {
                both.wait();
                "a"
            },
            || {
                both.wait();
                2
            },
        );
        assert_eq!((a, b), ("a", 2));
    }

    #[test]
    fn no_items_and_one_item_need_no_thread() {
        let none: Vec<u8> = map(Vec::new(), 4, |x: u8| x);
        assert!(none.is_empty());
        let caller = std::thread::current().id();
        assert_eq!(
            map(vec![1], 4, |_| std::thread::current().id()),
            vec![caller]
        );
    }

    #[test]
    fn a_walk_starts_independent_items_together_and_dependents_after() {
        let both = std::sync::Barrier::new(2);
        // 0 and 1 wait for each other: run one after the other, this would never return.
        let deps = vec![vec![], vec![], vec![0, 1], vec![2]];
        let order = std::sync::Mutex::new(Vec::new());
        let out = walk(
            vec![0, 1, 2, 3],
            &deps,
            4,
            |i: usize| {
                if i < 2 {
                    both.wait();
                }
                order.lock().expect("order").push(i);
                i
            },
            |_| true,
        );
        let order = order.into_inner().expect("order");
        assert_eq!(&order[2..], &[2, 3], "{order:?}");
        // 0 and 1 finish at about the same time, in either order on each side.
        let answers: Vec<usize> = out.iter().map(|w| w.answer).collect();
        assert_eq!(&answers[2..], &[2, 3], "{answers:?}");
        let mut first_two = answers[..2].to_vec();
        first_two.sort_unstable();
        assert_eq!(first_two, [0, 1], "{answers:?}");
    }

    #[test]
    fn a_refused_answer_starts_nothing_more_and_width_bounds_the_walk() {
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let refused = std::sync::atomic::AtomicBool::new(false);
        let deps = vec![vec![], vec![], vec![], vec![0], vec![]];
        let out = walk(
            (0..5).collect(),
            &deps,
            2,
            |i: usize| {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                // 0 ends first and refuses, while 1 still runs: 1 ends only once the walk has
                // judged 0's answer (a sleep of 1 could end first on a loaded machine, and its
                // free slot start 2 before 0's refusal came).
                if i == 1 {
                    until(|| refused.load(Ordering::SeqCst));
                }
                now.fetch_sub(1, Ordering::SeqCst);
                i
            },
            |&i| {
                refused.fetch_or(i == 0, Ordering::SeqCst);
                i != 0
            },
        );
        assert!(most.load(Ordering::SeqCst) <= 2, "{most:?}");
        let ran: Vec<usize> = out.iter().map(|w| w.index).collect();
        // 0 and 1 ran together; 0 refused, so 3 (after 0), 2 and 4 never started.
        assert_eq!(ran.len(), 2, "{ran:?}");
        assert!(ran.contains(&0) && ran.contains(&1), "{ran:?}");
    }

    #[test]
    fn a_released_item_starts_its_dependents_while_it_still_runs() {
        let dependent_ran = std::sync::atomic::AtomicBool::new(false);
        // 0 releases 1, then waits until 1 ran: released at its end only, this would never
        // return.
        let out = walk_releasing(
            vec![0, 1],
            &[vec![], vec![0]],
            2,
            |i: usize, release| {
                if i == 0 {
                    release.now();
                    until(|| dependent_ran.load(Ordering::SeqCst));
                    assert!(dependent_ran.load(Ordering::SeqCst), "1 never started");
                } else {
                    dependent_ran.store(true, Ordering::SeqCst);
                }
                i
            },
            |_| true,
        );
        let finished: Vec<usize> = out.iter().map(|w| w.index).collect();
        assert_eq!(finished, [1, 0]);
    }

    #[test]
    fn a_refusal_after_a_release_starts_nothing_more_and_the_released_finish() {
        let released_ran = std::sync::atomic::AtomicBool::new(false);
        // 0 releases 1 and 2 and refuses once 1 runs; 3 waits for 1, which finishes only
        // after 0 refused, so 3 never starts.
        let refused = std::sync::atomic::AtomicBool::new(false);
        let out = walk_releasing(
            vec![0, 1, 2, 3],
            &[vec![], vec![0], vec![0], vec![1]],
            4,
            |i: usize, release| {
                match i {
                    0 => {
                        release.now();
                        until(|| released_ran.load(Ordering::SeqCst));
                    }
                    1 => {
                        released_ran.store(true, Ordering::SeqCst);
                        until(|| refused.load(Ordering::SeqCst));
                    }
                    _ => {}
                }
                i
            },
            |&i| {
                refused.fetch_or(i == 0, Ordering::SeqCst);
                i != 0
            },
        );
        let mut finished: Vec<usize> = out.iter().map(|w| w.index).collect();
        finished.sort_unstable();
        assert_eq!(finished, [0, 1, 2]);
    }

    #[test]
    fn an_item_that_says_it_is_refused_starts_nothing_more_before_it_answers() {
        let refused_said = std::sync::atomic::AtomicBool::new(false);
        let second_done = std::sync::atomic::AtomicBool::new(false);
        // 0 releases 1, says it is refused, and answers only once 1 is done; 1 releases 2
        // after that. Without the word, 2 would start while 0 still works.
        let out = walk_releasing(
            vec![0, 1, 2],
            &[vec![], vec![0], vec![1]],
            3,
            |i: usize, release| {
                match i {
                    0 => {
                        release.now();
                        release.refused();
                        refused_said.store(true, Ordering::SeqCst);
                        until(|| second_done.load(Ordering::SeqCst));
                    }
                    1 => {
                        until(|| refused_said.load(Ordering::SeqCst));
                        release.now();
                        second_done.store(true, Ordering::SeqCst);
                    }
                    _ => {}
                }
                i
            },
            |&i| i != 0,
        );
        let mut ran: Vec<usize> = out.iter().map(|w| w.index).collect();
        ran.sort_unstable();
        assert_eq!(ran, [0, 1]);
    }
}
