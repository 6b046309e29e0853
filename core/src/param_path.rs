//! An error found at a parameter path (`units[2].image`, `migrations[0].backup`): the path,
//! and the error found there kept as its source. Every module whose parameters nest names its
//! errors so, and a path grows from the inside out as the error passes up through the entries.

/// The error `source`, found at the parameter path `at`.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {source}")]
pub struct AtParam<E: std::error::Error + 'static> {
    pub at: String,
    #[source]
    pub source: Box<E>,
}

/// An error type with a variant for an error at a parameter path.
pub trait WithinParam: std::error::Error + Sized + 'static {
    /// The error as found at a path, or itself when it is not one.
    fn into_at(self) -> Result<AtParam<Self>, Self>;

    fn from_at(at: AtParam<Self>) -> Self;

    /// The same error, named as coming from the parameter (or entry) `at`: an error already
    /// at a path gets `at` in front of it.
    fn within(self, at: &str) -> Self {
        Self::from_at(match self.into_at() {
            Ok(inner) => AtParam {
                at: format!("{at}.{}", inner.at),
                source: inner.source,
            },
            Err(other) => AtParam {
                at: at.to_string(),
                source: Box::new(other),
            },
        })
    }
}

/// `WithinParam` for the error enum `$ty` whose variant `$variant` holds an `AtParam` of it:
/// `within_param!(UnitError::In);`.
macro_rules! within_param {
    ($ty:ident :: $variant:ident) => {
        impl $crate::param_path::WithinParam for $ty {
            fn into_at(self) -> Result<$crate::param_path::AtParam<$ty>, $ty> {
                match self {
                    $ty::$variant(at) => Ok(at),
                    other => Err(other),
                }
            }

            fn from_at(at: $crate::param_path::AtParam<$ty>) -> $ty {
                $ty::$variant(at)
            }
        }
    };
}
pub(crate) use within_param;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[derive(Debug, thiserror::Error)]
    enum E {
        #[error("bad")]
        Bad,
        #[error(transparent)]
        In(AtParam<E>),
    }

    within_param!(E::In);

    #[test]
    fn the_path_grows_outward_and_the_cause_stays_the_source() {
        let e = E::Bad.within("image").within("units[2]");
        assert_eq!(e.to_string(), "units[2].image: bad");
        let cause = e.source().expect("the cause is kept as the source");
        assert_eq!(cause.to_string(), "bad");
        assert!(cause.source().is_none());
    }
}
