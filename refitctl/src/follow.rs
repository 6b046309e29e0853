//! `--json` of deploy, update, upgrade and rollback: the run's events file, as the progress
//! callback and refit's actions write it (each progress event of a long step, each refit task's
//! result, the closing stats), copied to stdout a whole line at a time as it grows, so that a
//! script follows the run as a person follows the screen.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the file is looked at: the action writes a progress event within a quarter second
/// of the host, so a line reaches stdout within a fifth of a second more.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// A thread copying the events file to stdout until `finish`.
pub struct Follower {
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Follower {
    pub fn start(path: PathBuf) -> Self {
        Self::start_to(path, std::io::stdout)
    }

    fn start_to<W: Write, F: Fn() -> W + Send + 'static>(path: PathBuf, out: F) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let mut copied = 0u64;
            loop {
                // Read after the flag: once ansible-playbook has exited, this look gets all.
                let last = seen.load(Ordering::Acquire);
                copied += copy_whole_lines(&path, copied, &mut out());
                if last {
                    return;
                }
                std::thread::sleep(LOOK_EVERY);
            }
        });
        Self { done, thread }
    }

    /// Copies what the file holds now, then stops: called once ansible-playbook has exited.
    pub fn finish(self) {
        self.done.store(true, Ordering::Release);
        let _ = self.thread.join();
    }
}

/// Copies the whole lines of `path` after byte `from` to `out`; the bytes copied. A line still
/// being written waits for the next look; a file not there yet, or a closed stdout, copies
/// nothing (not worth stopping a run over).
fn copy_whole_lines(path: &std::path::Path, from: u64, out: &mut impl Write) -> u64 {
    let mut text = Vec::new();
    let read = std::fs::File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        f.read_to_end(&mut text)
    });
    if read.is_err() {
        return 0;
    }
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if whole > 0 {
        let _ = out.write_all(&text[..whole]).and_then(|()| out.flush());
    }
    whole as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What the follower wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("sink").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("sink").clone()).expect("utf-8")
        }
    }

    #[test]
    fn lines_are_copied_as_they_come_whole_and_once() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("events");
        let sink = Sink::default();
        let out = sink.clone();
        let follower = Follower::start_to(path.clone(), move || out.clone());
        let append = |s: &str| {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .expect("open");
            f.write_all(s.as_bytes()).expect("append");
        };
        // The file appears after the follower started; its first line while the run goes on.
        append("{\"progress\": 1}\n{\"progr");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.text().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(sink.text(), "{\"progress\": 1}\n", "before the run's end");
        append("ess\": 2}\n{\"stats\": {}}\n");
        follower.finish();
        assert_eq!(
            sink.text(),
            "{\"progress\": 1}\n{\"progress\": 2}\n{\"stats\": {}}\n"
        );
    }
}
