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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn answers_keep_the_items_order_and_no_more_than_width_run_at_once() {
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let out = map((0..10).collect(), 3, |i: u64| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
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
}
