//! One look at the unit containers for a call. `flow_state begin` checks its services' health
//! and then plans every unit, and each read the containers with a list call of its own; on a
//! host whose podman service wakes for the call, each list is some 15 ms of the host's CPU.
//! Armed, the look keeps the next list, and later reads pick from it until it is forgotten:
//! `Remembered` forgets it whenever it forgets its own look at systemd (a job, a reload, the
//! host changed meanwhile), so the two stay one look at the host.

use super::ContainerInfo;
use std::sync::{Mutex, MutexGuard};

#[derive(Default)]
pub(super) struct ContainerLook(Mutex<Look>);

#[derive(Default)]
enum Look {
    /// Every read lists.
    #[default]
    Off,
    /// The next list is kept.
    Armed,
    /// Every unit container, as the kept list found them.
    Seen(Vec<ContainerInfo>),
}

impl ContainerLook {
    pub(super) fn arm(&self) {
        *self.lock() = Look::Armed;
    }

    pub(super) fn forget(&self) {
        *self.lock() = Look::Off;
    }

    /// The kept list, when there is one.
    pub(super) fn seen(&self) -> Option<Vec<ContainerInfo>> {
        match &*self.lock() {
            Look::Seen(all) => Some(all.clone()),
            Look::Armed | Look::Off => None,
        }
    }

    /// Keeps `all`, an earlier call's list, as if this call had listed it: for an armed look
    /// only, since one forgotten meanwhile must list anew.
    pub(super) fn adopt(&self, all: Vec<ContainerInfo>) {
        let mut look = self.lock();
        if matches!(*look, Look::Armed) {
            *look = Look::Seen(all);
        }
    }

    /// The kept list, or `list`'s, kept when the look is armed. The lock is not held across
    /// `list`: a list forgotten while it ran is not kept.
    pub(super) fn get_or<E>(
        &self,
        list: impl FnOnce() -> Result<Vec<ContainerInfo>, E>,
    ) -> Result<Vec<ContainerInfo>, E> {
        match &*self.lock() {
            Look::Seen(all) => return Ok(all.clone()),
            Look::Armed | Look::Off => {}
        }
        let all = list()?;
        let mut look = self.lock();
        if matches!(*look, Look::Armed) {
            *look = Look::Seen(all.clone());
        }
        Ok(all)
    }

    fn lock(&self) -> MutexGuard<'_, Look> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::ContainerLook;
    use crate::podman::{ContainerInfo, ContainerState};
    use std::cell::Cell;

    fn container(unit: &str) -> ContainerInfo {
        ContainerInfo {
            id: format!("id-{unit}"),
            image_id: "img".into(),
            revision: None,
            unit: unit.into(),
            state: ContainerState::parse("running"),
            health: None,
            started_at: 0,
        }
    }

    /// A list that counts its calls and answers the containers it holds now.
    fn lister<'a>(
        calls: &'a Cell<u32>,
        now: &'a [&'a str],
    ) -> impl Fn() -> Result<Vec<ContainerInfo>, ()> + 'a {
        move || {
            calls.set(calls.get() + 1);
            Ok(now.iter().map(|u| container(u)).collect())
        }
    }

    #[test]
    fn unarmed_every_read_lists() {
        let look = ContainerLook::default();
        let calls = Cell::new(0);
        for _ in 0..3 {
            look.get_or(lister(&calls, &["a.service"])).expect("list");
        }
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn armed_the_first_list_answers_the_later_reads() {
        let look = ContainerLook::default();
        look.arm();
        let calls = Cell::new(0);
        let first = look.get_or(lister(&calls, &["a.service"])).expect("list");
        let later = look.get_or(lister(&calls, &["b.service"])).expect("list");
        assert_eq!(calls.get(), 1);
        assert_eq!(later, first);
    }

    #[test]
    fn forgotten_every_read_lists_again() {
        let look = ContainerLook::default();
        look.arm();
        let calls = Cell::new(0);
        look.get_or(lister(&calls, &["a.service"])).expect("list");
        look.forget();
        let now = look.get_or(lister(&calls, &["b.service"])).expect("list");
        look.get_or(lister(&calls, &["b.service"])).expect("list");
        assert_eq!(calls.get(), 3);
        assert_eq!(now[0].unit, "b.service");
    }

    #[test]
    fn a_failed_list_is_not_kept() {
        let look = ContainerLook::default();
        look.arm();
        let calls = Cell::new(0);
        assert!(look.get_or(|| Err::<Vec<ContainerInfo>, ()>(())).is_err());
        look.get_or(lister(&calls, &["a.service"])).expect("list");
        look.get_or(lister(&calls, &["a.service"])).expect("list");
        assert_eq!(calls.get(), 1, "the list after the failure is the one kept");
    }

    #[test]
    fn a_list_forgotten_while_it_ran_is_not_kept() {
        let look = ContainerLook::default();
        look.arm();
        let calls = Cell::new(0);
        look.get_or(|| {
            look.forget();
            lister(&calls, &["a.service"])()
        })
        .expect("list");
        look.get_or(lister(&calls, &["a.service"])).expect("list");
        assert_eq!(calls.get(), 2);
    }
}
