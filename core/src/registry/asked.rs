//! Digests asked of the registries all at once: a run that pulls with `pull: always` asks for
//! every image's digest before it decides to pull, and one after the other those round trips
//! add up (five images, about a tenth of a second, on a no-op update that does nothing else).

use super::{Location, Registry, RegistryError};
use std::collections::HashMap;

/// At most this many lookups in flight at once, so a deployment of a hundred images does not
/// open a hundred connections.
const IN_FLIGHT: usize = 8;

/// A registry whose answers for some locations were asked in advance; any other location is
/// asked of the registry behind it.
pub struct Asked<'a> {
    inner: &'a dyn Registry,
    answers: HashMap<String, Result<String, RegistryError>>,
}

impl<'a> Asked<'a> {
    /// Asks for every location's digest, several at a time.
    pub fn ask_all(inner: &'a dyn Registry, locations: &[Location]) -> Self {
        let mut distinct: Vec<&Location> = Vec::new();
        for loc in locations {
            if !distinct
                .iter()
                .any(|d| d.name() == loc.name() && d.tag == loc.tag)
            {
                distinct.push(loc);
            }
        }
        let answers =
            crate::parallel::map(distinct, IN_FLIGHT, |loc| (key(loc), inner.digest(loc)))
                .into_iter()
                .collect();
        Asked { inner, answers }
    }
}

fn key(loc: &Location) -> String {
    format!("{}:{}", loc.name(), loc.tag)
}

impl Registry for Asked<'_> {
    fn digest(&self, image: &Location) -> Result<String, RegistryError> {
        match self.answers.get(&key(image)) {
            Some(answer) => answer.clone(),
            None => self.inner.digest(image),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers after noting the question; fails for one repository.
    #[derive(Default)]
    struct Counting {
        asked: Mutex<Vec<String>>,
    }

    impl Registry for Counting {
        fn digest(&self, image: &Location) -> Result<String, RegistryError> {
            self.asked.lock().expect("asked").push(key(image));
            if image.repository == "gone" {
                return Err(RegistryError::Refused {
                    registry: image.registry.clone(),
                    image: key(image),
                    status: 404,
                });
            }
            Ok(format!("sha256:{}", image.repository))
        }
    }

    fn loc(reference: &str) -> Location {
        Location::of(&crate::podman::ImageRef::parse(reference).expect("reference"))
    }

    #[test]
    fn each_image_is_asked_once_in_advance_and_answered_from_that() {
        let inner = Counting::default();
        let wanted = [
            loc("r.io/a:1"),
            loc("r.io/b:1"),
            loc("r.io/a:1"),
            loc("r.io/gone:1"),
        ];
        let asked = Asked::ask_all(&inner, &wanted);
        let mut seen = inner.asked.lock().expect("asked").clone();
        seen.sort();
        assert_eq!(seen, ["r.io/a:1", "r.io/b:1", "r.io/gone:1"], "once each");
        assert_eq!(
            asked.digest(&loc("r.io/a:1")).ok().as_deref(),
            Some("sha256:a")
        );
        assert!(
            matches!(
                asked.digest(&loc("r.io/gone:1")),
                Err(RegistryError::Refused { status: 404, .. })
            ),
            "a failure is kept, and answered the same"
        );
        assert_eq!(
            inner.asked.lock().expect("asked").len(),
            3,
            "no second question"
        );
        assert_eq!(
            asked.digest(&loc("r.io/c:2")).ok().as_deref(),
            Some("sha256:c")
        );
        assert_eq!(
            inner.asked.lock().expect("asked").len(),
            4,
            "an unasked one goes through"
        );
    }
}
