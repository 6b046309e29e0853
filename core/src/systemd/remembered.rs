//! A `Systemd` that answers `show` from the first look at a known set of units until refit
//! changes anything. `flow_state begin` checks its services' health and then plans every unit
//! from what systemd says of them: one `systemctl show` for both instead of two, which on a
//! busy systemd (a health check's transient units every few seconds) is half the calls that
//! may queue behind it.

use super::{Job, Systemd, SystemdError, UnitStatus};
use std::collections::HashMap;
use std::sync::Mutex;

pub struct Remembered<'a> {
    inner: &'a dyn Systemd,
    /// Asked for with the first `show`, whatever it asks: the units a later `show` will want.
    also: Vec<String>,
    seen: Mutex<Option<HashMap<String, UnitStatus>>>,
}

impl<'a> Remembered<'a> {
    pub fn new(inner: &'a dyn Systemd, also: Vec<String>) -> Self {
        Remembered {
            inner,
            also,
            seen: Mutex::new(None),
        }
    }

    /// Forgets what was seen: after a change, only systemd itself knows.
    fn changing(&self) {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Systemd for Remembered<'_> {
    fn show(&self, units: &[String]) -> Result<Vec<UnitStatus>, SystemdError> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = seen.as_ref()
            && let Some(known) = units.iter().map(|u| map.get(u).cloned()).collect()
        {
            return Ok(known);
        }
        let first = seen.is_none();
        let mut asked: Vec<String> = units.to_vec();
        if first {
            asked.extend(self.also.iter().filter(|u| !units.contains(u)).cloned());
        }
        let statuses = self.inner.show(&asked)?;
        if first {
            *seen = Some(
                statuses
                    .iter()
                    .map(|st| (st.name.clone(), st.clone()))
                    .collect(),
            );
        }
        Ok(statuses.into_iter().take(units.len()).collect())
    }

    fn daemon_reload(&self) -> Result<(), SystemdError> {
        self.changing();
        self.inner.daemon_reload()
    }

    fn enqueue(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.changing();
        self.inner.enqueue(job, units)
    }

    fn run_job(&self, job: Job, units: &[String]) -> Result<(), SystemdError> {
        self.changing();
        self.inner.run_job(job, units)
    }

    fn run_job_within(
        &self,
        job: Job,
        units: &[String],
        bound: std::time::Duration,
    ) -> Result<bool, SystemdError> {
        self.changing();
        self.inner.run_job_within(job, units, bound)
    }

    fn reset_failed(&self, units: &[String]) -> Result<(), SystemdError> {
        self.changing();
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
    fn a_change_sends_the_next_look_to_systemd() {
        let fake = FakeSystemd::with_active("db.service", "i1");
        let seen = Remembered::new(&fake, Vec::new());
        seen.show(&names(&["db.service"])).expect("show");
        seen.enqueue(Job::Restart, &names(&["db.service"]))
            .expect("enqueue");
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
