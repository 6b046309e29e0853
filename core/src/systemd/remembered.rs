//! A `Systemd` that answers `show` from the first look at a known set of units until refit
//! changes anything, or is told the host may have changed; from then on every call is
//! systemd's own (a wait polls `show`, and must see each change). `flow_state begin` checks its services' health and then plans every unit
//! from what systemd says of them: one `systemctl show` for both instead of two, which on a
//! busy systemd (a health check's transient units every few seconds) is half the calls that
//! may queue behind it.

use super::{Job, Systemd, SystemdError, UnitStatus};
use crate::podman::Podman;
use std::collections::HashMap;
use std::sync::Mutex;

pub struct Remembered<'a> {
    inner: &'a dyn Systemd,
    /// Asked for with the first `show`, whatever it asks: the units a later `show` will want.
    also: Vec<String>,
    look: Mutex<Look>,
    /// The podman whose look at the unit containers is held and forgotten with this one.
    podman: Option<&'a dyn Podman>,
}

enum Look {
    /// Nothing asked yet.
    NotYet,
    /// The first look, by unit.
    Seen(HashMap<String, UnitStatus>),
    /// Something changed since: every call goes to systemd.
    Spent,
}

impl<'a> Remembered<'a> {
    pub fn new(inner: &'a dyn Systemd, also: Vec<String>) -> Self {
        Remembered {
            inner,
            also,
            look: Mutex::new(Look::NotYet),
            podman: None,
        }
    }

    /// Holds podman's look at the unit containers as this one holds systemd's, and forgets it
    /// at the same moments: what the containers are is part of the same look at the host.
    pub fn with_containers(mut self, podman: &'a dyn Podman) -> Self {
        podman.remember_containers();
        self.podman = Some(podman);
        self
    }

    /// Forgets the first look for good: the host may have changed (another module held the
    /// state lock meanwhile, say), or refit changed it.
    pub fn forget(&self) {
        *self.look.lock().unwrap_or_else(|e| e.into_inner()) = Look::Spent;
        if let Some(podman) = self.podman {
            podman.forget_containers();
        }
    }
}

/// The look at the containers ends with this one: nothing after it may read a stale list.
impl Drop for Remembered<'_> {
    fn drop(&mut self) {
        self.forget();
    }
}

impl Systemd for Remembered<'_> {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        let mut look = self.look.lock().unwrap_or_else(|e| e.into_inner());
        match &*look {
            Look::Spent => return self.inner.show(units),
            Look::Seen(map) => {
                if let Some(known) = units.iter().map(|u| map.get(u).cloned()).collect() {
                    return Ok(known);
                }
                return self.inner.show(units);
            }
            Look::NotYet => {}
        }
        let mut asked: Vec<String> = units.to_vec();
        asked.extend(self.also.iter().filter(|u| !units.contains(u)).cloned());
        let statuses = self.inner.show(&asked)?;
        *look = Look::Seen(
            statuses
                .iter()
                .map(|st| (st.name.clone(), st.clone()))
                .collect(),
        );
        Ok(statuses.into_iter().take(units.len()).collect())
    }

    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.forget();
        self.inner.daemon_reload()
    }

    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.forget();
        self.inner.enqueue(job, units)
    }

    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.forget();
        self.inner.run_job(job, units)
    }

    fn run_job_within(
        &self,
        job: Job,
        units: &[String],
        bound: std::time::Duration,
    ) -> Result<bool, SystemdError> {
        self.forget();
        self.inner.run_job_within(job, units, bound)
    }

    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        self.forget();
        self.inner.reset_failed(units)
    }

    fn journal_tail(&self, unit: &str, lines: usize) -> String {
        self.inner.journal_tail(unit, lines)
    }
}

#[cfg(test)]
mod tests {
    use super::Remembered;
    use crate::systemd::{Job, Systemd};
    use crate::testing::FakeSystemd;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_look_answers_the_health_check_and_the_plan() {
        let fake = FakeSystemd::with_active("db.service", "i1");
        let seen = Remembered::new(&fake, names(&["db.service", "worker@1.service"]));
        let first = seen.show(&names(&["db.service"])).expect("show");
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].name, "db.service");
        let plan = seen
            .show(&names(&["worker@1.service", "db.service"]))
            .expect("show");
        assert_eq!(plan[0].name, "worker@1.service");
        assert_eq!(plan[1].invocation_id(), "i1");
        assert_eq!(fake.shows(), 1, "the second look came from the first");
    }

    #[test]
    fn after_a_change_every_look_is_systemds_own() {
        let fake = FakeSystemd::with_active("db.service", "i1");
        let seen = Remembered::new(&fake, Vec::new());
        seen.show(&names(&["db.service"])).expect("show");
        seen.enqueue(Job::Restart, &names(&["db.service"]))
            .expect("enqueue");
        // A wait polls: each of its looks must reach systemd.
        for _ in 0..3 {
            seen.show(&names(&["db.service"])).expect("show");
        }
        assert_eq!(fake.shows(), 4);
    }

    #[test]
    fn a_forgotten_look_is_asked_again() {
        let fake = FakeSystemd::with_active("db.service", "i1");
        let seen = Remembered::new(&fake, Vec::new());
        seen.show(&names(&["db.service"])).expect("show");
        seen.forget();
        seen.show(&names(&["db.service"])).expect("show");
        assert_eq!(fake.shows(), 2);
    }

    #[test]
    fn a_unit_not_looked_at_is_asked_of_systemd() {
        let fake = FakeSystemd::default();
        let seen = Remembered::new(&fake, Vec::new());
        seen.show(&names(&["a.service"])).expect("show");
        seen.show(&names(&["b.service"])).expect("show");
        assert_eq!(fake.shows(), 2);
    }
}
