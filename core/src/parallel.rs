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
