//! What each image reference named when this call last inspected it. One module call asks
//! after the same image several times (the preflight's image check, each unit's observation,
//! the digest comparison), and every answer is an API round trip; the answers stay true
//! until this call changes the image store, which forgets them all, before and after the
//! change. Pulls run in parallel with inspects: an answer asked before a change and received
//! after it is not remembered, which a generation count tells.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// An inspected image: its ID (no `sha256:`) and its `REPO@DIGEST` names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Inspected {
    pub id: String,
    pub repo_digests: Vec<String>,
}

/// The answers so far, by reference; `None` is a reference that names no local image.
#[derive(Default)]
pub(super) struct KnownImages(Mutex<Known>);

#[derive(Default)]
struct Known {
    answers: HashMap<String, Option<Inspected>>,
    /// Counts the changes begun or ended: an answer is kept only if none came while it was asked.
    generation: u64,
}

impl KnownImages {
    /// The remembered answer for `image`, or `inspect`'s, remembered when it succeeds. The
    /// lock is not held across `inspect`: two threads asking at once both ask podman.
    pub(super) fn get_or<E>(
        &self,
        image: &str,
        inspect: impl FnOnce() -> Result<Option<Inspected>, E>,
    ) -> Result<Option<Inspected>, E> {
        let asked_in = {
            let known = self.lock();
            if let Some(answer) = known.answers.get(image) {
                return Ok(answer.clone());
            }
            known.generation
        };
        let answer = inspect()?;
        let mut known = self.lock();
        if known.generation == asked_in {
            known.answers.insert(image.to_string(), answer.clone());
        }
        Ok(answer)
    }

    /// Remembers what `list` found, by reference, unless the store changed while it asked. A
    /// reference it did not find stays unknown: an inspect may still resolve it (a short name).
    pub(super) fn fill<E>(
        &self,
        list: impl FnOnce() -> Result<HashMap<String, Inspected>, E>,
    ) -> Result<(), E> {
        let asked_in = self.lock().generation;
        let found = list()?;
        let mut known = self.lock();
        if known.generation == asked_in {
            known
                .answers
                .extend(found.into_iter().map(|(k, v)| (k, Some(v))));
        }
        Ok(())
    }

    /// Every answer so far, for the record a call with nothing to do leaves (`record`).
    pub(super) fn answers(&self) -> BTreeMap<String, Option<Inspected>> {
        self.lock().answers.clone().into_iter().collect()
    }

    /// Takes answers kept from an earlier call as this call's own.
    pub(super) fn adopt(&self, answers: BTreeMap<String, Option<Inspected>>) {
        self.lock().answers.extend(answers);
    }

    /// Whether every one of `images` has its answer already.
    pub(super) fn knows_all(&self, images: &[String]) -> bool {
        let known = self.lock();
        images.iter().all(|i| known.answers.contains_key(i))
    }

    /// `change` to the image store, with every answer forgotten before and after it.
    pub(super) fn changing<T>(&self, change: impl FnOnce() -> T) -> T {
        self.forget();
        let out = change();
        self.forget();
        out
    }

    fn forget(&self) {
        let mut known = self.lock();
        known.answers.clear();
        known.generation += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        // A panic while holding the map cannot leave it half written: take it as it is.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn image(id: &str) -> Option<Inspected> {
        Some(Inspected {
            id: id.into(),
            repo_digests: vec![format!("r@sha256:{id}")],
        })
    }

    #[test]
    fn an_answer_is_asked_once_until_the_store_changes() {
        let known = KnownImages::default();
        let asked = Cell::new(0);
        let ask = |answer: Option<Inspected>| {
            asked.set(asked.get() + 1);
            Ok::<_, ()>(answer)
        };
        assert_eq!(known.get_or("r:1", || ask(image("a"))), Ok(image("a")));
        assert_eq!(known.get_or("r:1", || ask(image("b"))), Ok(image("a")));
        assert_eq!(known.get_or("r:2", || ask(None)), Ok(None));
        assert_eq!(known.get_or("r:2", || ask(image("c"))), Ok(None));
        assert_eq!(asked.get(), 2);
        known.changing(|| ());
        assert_eq!(known.get_or("r:1", || ask(image("b"))), Ok(image("b")));
        assert_eq!(asked.get(), 3);
    }

    #[test]
    fn an_answer_asked_while_the_store_changed_is_not_remembered() {
        let known = KnownImages::default();
        // The inspect runs while a pull (here, inside it) changes the store.
        let during = known.get_or("r:1", || Ok::<_, ()>(known.changing(|| image("old"))));
        assert_eq!(during, Ok(image("old")));
        assert_eq!(
            known.get_or("r:1", || Ok::<_, ()>(image("new"))),
            Ok(image("new"))
        );
    }

    #[test]
    fn a_list_answers_what_it_found_and_leaves_the_rest_to_inspects() {
        let known = KnownImages::default();
        let listed = HashMap::from([("r:1".to_string(), image("a").expect("image"))]);
        known.fill(|| Ok::<_, ()>(listed.clone())).expect("fill");
        let inspected = Cell::new(0);
        let ask = |answer: Option<Inspected>| {
            inspected.set(inspected.get() + 1);
            Ok::<_, ()>(answer)
        };
        assert_eq!(known.get_or("r:1", || ask(image("b"))), Ok(image("a")));
        assert_eq!(known.get_or("short:1", || ask(image("c"))), Ok(image("c")));
        assert_eq!(
            inspected.get(),
            1,
            "only the reference the list had not found"
        );
        // A list made while the store changed is not remembered.
        let later = KnownImages::default();
        later
            .fill(|| Ok::<_, ()>(later.changing(|| listed.clone())))
            .expect("fill");
        assert_eq!(later.get_or("r:1", || ask(image("d"))), Ok(image("d")));
    }

    #[test]
    fn a_failed_inspect_is_not_remembered() {
        let known = KnownImages::default();
        assert_eq!(
            known.get_or("r:1", || Err("podman away")),
            Err("podman away")
        );
        assert_eq!(
            known.get_or("r:1", || Ok::<_, &str>(image("a"))),
            Ok(image("a"))
        );
    }
}
