//! The steps of one module call and the JSON lines they become: held until the call detaches,
//! then appended to its events file, one `write` per line so a reader never meets half of one
//! but at the very end.

use crate::ansible::mask::mask;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::time::{Duration, Instant};

/// How long a step goes without a line before a tick says it still runs: well within the five
/// seconds a user should wait at most to see that a long step is alive.
pub const TICK_EVERY: Duration = Duration::from_secs(3);

/// One line of progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Milliseconds since the call began.
    pub at_ms: u64,
    pub kind: Kind,
    /// What the step does ("migrating api").
    pub step: String,
    pub elapsed_s: u64,
    /// The step's deadline, in seconds, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_s: Option<u64>,
    /// The line to show, as the action shows it.
    pub line: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Begin,
    Tick,
    End,
    /// A moment, not a step: a service started, a health check passed.
    Note,
}

/// A step that has begun and not ended.
#[derive(Debug)]
struct Open {
    id: u64,
    what: String,
    limit: Option<Duration>,
    since: Instant,
    /// When its last line was recorded, which the next tick counts from.
    last_line: Instant,
}

/// Where the lines go.
#[derive(Debug)]
enum Out {
    /// The call has not detached: the lines wait for it.
    Held(Vec<String>),
    /// Detached: appended to the events file.
    File(std::fs::File),
    /// The call has answered, or its events file failed: nothing more is recorded.
    Closed,
}

#[derive(Debug)]
pub struct Recorder {
    started: Instant,
    next_id: u64,
    open: Vec<Open>,
    secrets: Vec<String>,
    out: Out,
}

impl Recorder {
    pub fn new(started: Instant) -> Self {
        Recorder {
            started,
            next_id: 0,
            open: Vec::new(),
            secrets: Vec::new(),
            out: Out::Held(Vec::new()),
        }
    }

    /// The call's secrets (its `no_log` values and their escaped forms), masked in every line.
    pub fn mask_with(&mut self, secrets: Vec<String>) {
        self.secrets = secrets;
    }

    pub fn begin(&mut self, what: String, limit: Option<Duration>, now: Instant) -> u64 {
        self.next_id += 1;
        let open = Open {
            id: self.next_id,
            what,
            limit,
            since: now,
            last_line: now,
        };
        self.record(&open, Kind::Begin, now);
        self.open.push(open);
        self.next_id
    }

    pub fn end(&mut self, id: u64, now: Instant) {
        if let Some(i) = self.open.iter().position(|o| o.id == id) {
            let open = self.open.remove(i);
            self.record(&open, Kind::End, now);
        }
    }

    /// A moment worth a line of its own ("api started"), as it is seen.
    pub fn note(&mut self, what: String, now: Instant) {
        let moment = Open {
            id: 0,
            what,
            limit: None,
            since: now,
            last_line: now,
        };
        self.record(&moment, Kind::Note, now);
    }

    /// A tick for each open step that has been quiet for `TICK_EVERY`.
    pub fn tick(&mut self, now: Instant) {
        let mut open = std::mem::take(&mut self.open);
        for o in open
            .iter_mut()
            .filter(|o| now.duration_since(o.last_line) >= TICK_EVERY)
        {
            self.record(o, Kind::Tick, now);
            o.last_line = now;
        }
        self.open = open;
    }

    /// From now on the lines go to `events`, the held ones first.
    pub fn detach(&mut self, mut events: std::fs::File) -> std::io::Result<()> {
        if let Out::Held(lines) = &self.out {
            for line in lines {
                events.write_all(line.as_bytes())?;
            }
        }
        self.out = Out::File(events);
        Ok(())
    }

    /// Neither detached nor closed: the call may still detach.
    pub fn is_held(&self) -> bool {
        matches!(self.out, Out::Held(_))
    }

    /// Whether a step is under way: what a detached call would show.
    pub fn has_open_step(&self) -> bool {
        !self.open.is_empty()
    }

    pub fn is_detached(&self) -> bool {
        matches!(self.out, Out::File(_))
    }

    /// Nothing more is recorded: the call answers.
    pub fn close(&mut self) {
        self.out = Out::Closed;
    }

    fn record(&mut self, o: &Open, kind: Kind, now: Instant) {
        if matches!(self.out, Out::Closed) {
            return;
        }
        let event = event(o, kind, now, now.duration_since(self.started));
        let Ok(mut value) = serde_json::to_value(&event) else {
            return;
        };
        mask(&mut value, &self.secrets);
        let line = format!("{value}\n");
        match &mut self.out {
            Out::Held(lines) => lines.push(line),
            Out::File(f) => {
                // A full disk ends the view, not the call: the result is written elsewhere.
                if f.write_all(line.as_bytes()).is_err() {
                    self.out = Out::Closed;
                }
            }
            Out::Closed => {}
        }
    }
}

fn event(o: &Open, kind: Kind, now: Instant, since_start: Duration) -> Event {
    let elapsed = now.duration_since(o.since);
    let limit_s = o.limit.map(|l| l.as_secs());
    let line = match (kind, limit_s) {
        (Kind::Begin | Kind::Note, _) => o.what.clone(),
        (Kind::Tick, None) => format!("{} ({} s)", o.what, elapsed.as_secs()),
        (Kind::Tick, Some(l)) => format!("{} ({} s of {l})", o.what, elapsed.as_secs()),
        (Kind::End, _) => format!("{}: done in {:.1} s", o.what, elapsed.as_secs_f64()),
    };
    Event {
        at_ms: u64::try_from(since_start.as_millis()).unwrap_or(u64::MAX),
        kind,
        step: o.what.clone(),
        elapsed_s: elapsed.as_secs(),
        limit_s,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &std::path::Path) -> Vec<Event> {
        std::fs::read_to_string(path)
            .expect("read")
            .lines()
            .map(|l| serde_json::from_str(l).expect("an event per line"))
            .collect()
    }

    #[test]
    fn held_lines_go_to_the_file_first_then_each_as_it_comes() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("events");
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        let pull = r.begin("pulling app:1.1".into(), None, t0);
        r.end(pull, t0 + Duration::from_millis(400));
        let wait = r.begin(
            "waiting for api to be healthy".into(),
            Some(Duration::from_secs(60)),
            t0 + Duration::from_millis(500),
        );
        assert!(!r.is_detached());
        r.detach(std::fs::File::create(&path).expect("create"))
            .expect("detach");
        assert!(r.is_detached());
        assert_eq!(lines(&path).len(), 3, "the held lines are written at once");
        r.tick(t0 + Duration::from_secs(2));
        assert_eq!(lines(&path).len(), 3, "no tick before TICK_EVERY");
        r.tick(t0 + Duration::from_millis(3500));
        r.end(wait, t0 + Duration::from_secs(4));
        let shown: Vec<_> = lines(&path).into_iter().map(|e| e.line).collect();
        assert_eq!(
            shown,
            [
                "pulling app:1.1",
                "pulling app:1.1: done in 0.4 s",
                "waiting for api to be healthy",
                "waiting for api to be healthy (3 s of 60)",
                "waiting for api to be healthy: done in 3.5 s",
            ]
        );
        let last = lines(&path).pop().expect("end");
        assert_eq!(
            (last.kind, last.at_ms, last.elapsed_s),
            (Kind::End, 4000, 3)
        );
    }

    #[test]
    fn a_tick_comes_every_tick_every_while_a_step_lasts() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        r.begin("migrating api".into(), None, t0);
        for s in 1..=10 {
            r.tick(t0 + Duration::from_secs(s));
        }
        let Out::Held(held) = &r.out else {
            panic!("held")
        };
        let ticks: Vec<_> = held.iter().filter(|l| l.contains("\"tick\"")).collect();
        assert_eq!(ticks.len(), 3, "at 3, 6 and 9 s: {held:?}");
        assert!(ticks[2].contains("migrating api (9 s)"), "{}", ticks[2]);
    }

    #[test]
    fn a_note_is_one_line_at_once_and_leaves_open_steps_alone() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        let wait = r.begin("waiting for api to be healthy".into(), None, t0);
        r.note("api started".into(), t0 + Duration::from_millis(700));
        r.end(wait, t0 + Duration::from_secs(2));
        let Out::Held(held) = &r.out else {
            panic!("held")
        };
        let events: Vec<Event> = held
            .iter()
            .map(|l| serde_json::from_str(l).expect("an event per line"))
            .collect();
        let note = &events[1];
        assert_eq!(
            (note.kind, note.at_ms, note.line.as_str()),
            (Kind::Note, 700, "api started")
        );
        assert_eq!(
            events[2].line,
            "waiting for api to be healthy: done in 2.0 s"
        );
    }

    #[test]
    fn a_step_is_open_from_its_begin_to_its_end_and_a_note_opens_none() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        assert!(!r.has_open_step());
        r.note("api started".into(), t0);
        assert!(!r.has_open_step());
        let id = r.begin("pulling app:1.1".into(), None, t0);
        assert!(r.has_open_step());
        r.end(id, t0);
        assert!(!r.has_open_step());
    }

    #[test]
    fn secrets_are_masked_and_nothing_is_recorded_once_closed() {
        let d = tempfile::tempdir().expect("tmp");
        let path = d.path().join("events");
        let t0 = Instant::now();
        let mut r = Recorder::new(t0);
        r.mask_with(vec!["s3cret".into()]);
        r.detach(std::fs::File::create(&path).expect("create"))
            .expect("detach");
        let id = r.begin("backing up db with s3cret".into(), None, t0);
        r.close();
        r.end(id, t0 + Duration::from_secs(1));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("backing up db with ********"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}
