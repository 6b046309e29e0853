//! Which stream changes an upgrade may make. Pure code.

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PathError {
    #[error("stream {0} is not one of the known streams ({1}); check the stream name")]
    Unknown(String, String),
    #[error(
        "an upgrade from {from} to {to} skips {skipped}; upgrade to {next} first, one stream at a time"
    )]
    Skips {
        from: String,
        to: String,
        skipped: String,
        next: String,
    },
    #[error("an upgrade from {from} to {to} goes backwards; streams only move forward")]
    Backwards { from: String, to: String },
    #[error("{0} is not a MAJOR.MINOR stream; give the streams list to say their order")]
    NotAVersion(String),
}

/// Checks `from -> to` for an upgrade: the next stream only, unless `allow_skip`.
pub fn check_upgrade(
    from: &str,
    to: &str,
    streams: &[String],
    allow_skip: bool,
) -> Result<(), PathError> {
    if from == to {
        return Ok(());
    }
    let (fi, ti, order) = if streams.is_empty() {
        let f = parse(from)?;
        let t = parse(to)?;
        // Without a list, the next stream after X.Y is X.(Y+1).
        let rank = |v: (u64, u64)| v.0 * 10_000 + v.1;
        let next = format!("{}.{}", f.0, f.1 + 1);
        if rank(t) < rank(f) {
            return Err(PathError::Backwards {
                from: from.into(),
                to: to.into(),
            });
        }
        if !allow_skip && to != next {
            let skipped = (f.1 + 1..t.1)
                .map(|m| format!("{}.{m}", f.0))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PathError::Skips {
                from: from.into(),
                to: to.into(),
                skipped,
                next,
            });
        }
        return Ok(());
    } else {
        let pos = |s: &str| {
            streams
                .iter()
                .position(|x| x == s)
                .ok_or_else(|| PathError::Unknown(s.into(), streams.join(", ")))
        };
        (pos(from)?, pos(to)?, streams)
    };
    if ti < fi {
        return Err(PathError::Backwards {
            from: from.into(),
            to: to.into(),
        });
    }
    if !allow_skip && ti != fi + 1 {
        return Err(PathError::Skips {
            from: from.into(),
            to: to.into(),
            skipped: order[fi + 1..ti].join(", "),
            next: order[fi + 1].clone(),
        });
    }
    Ok(())
}

fn parse(s: &str) -> Result<(u64, u64), PathError> {
    let bad = || PathError::NotAVersion(s.to_string());
    let (a, b) = s.split_once('.').ok_or_else(bad)?;
    let b = b.split('.').next().unwrap_or(b);
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_next_stream() {
        assert_eq!(check_upgrade("1.0", "1.1", &[], false), Ok(()));
        assert!(
            matches!(check_upgrade("1.0", "1.3", &[], false), Err(PathError::Skips { ref skipped, .. }) if skipped == "1.1, 1.2")
        );
        assert!(matches!(
            check_upgrade("1.1", "1.0", &[], false),
            Err(PathError::Backwards { .. })
        ));
        let streams: Vec<String> = ["3.15", "3.16", "4.0"].map(String::from).to_vec();
        assert_eq!(check_upgrade("3.16", "4.0", &streams, false), Ok(()));
        assert!(check_upgrade("3.15", "4.0", &streams, false).is_err());
        assert_eq!(check_upgrade("3.15", "4.0", &streams, true), Ok(()));
        assert!(matches!(
            check_upgrade("3.15", "9.9", &streams, false),
            Err(PathError::Unknown(..))
        ));
    }
}
