//! Time: wall-clock timestamps for state records (RFC 3339 in UTC, without a date crate), and
//! the clock modules wait and keep run leases by, behind a trait so both are tested without
//! sleeping.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the kernel names the boot it is in; a container manager (systemd-nspawn) gives each
/// boot of a container its own.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// Time, behind a trait so waits and leases can be tested without sleeping.
pub trait Clock: Sync {
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
    /// This moment in the host's life, for a record that outlives the process (a run lease):
    /// the boot, and the time since it on a clock no one can set.
    fn boot_time(&self) -> Result<BootTime, BootTimeError>;
}

/// A moment as `CLOCK_BOOTTIME` tells it: it counts from the boot, goes on through suspend,
/// and never steps as the wall clock does (NTP, an operator's `date -s`). It is only
/// comparable within one boot, so the boot's ID goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootTime {
    pub boot_id: String,
    pub since_boot: Duration,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read this boot's ID from {path}: {source}; refit needs /proc mounted to tell a live run from a dead one"
)]
pub struct BootTimeError {
    path: &'static str,
    #[source]
    source: std::io::Error,
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
    fn boot_time(&self) -> Result<BootTime, BootTimeError> {
        let boot_id =
            std::fs::read_to_string(Path::new(BOOT_ID)).map_err(|source| BootTimeError {
                path: BOOT_ID,
                source,
            })?;
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        // The kernel never returns a negative time since boot; zero is the safe floor.
        let since_boot = Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_nsec).unwrap_or(0),
        );
        Ok(BootTime {
            boot_id: boot_id.trim().to_string(),
            since_boot,
        })
    }
}

pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// `2026-12-02T03:42:38Z` for seconds since the epoch.
pub fn rfc3339(secs: u64) -> String {
    let c = civil(secs);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// A UTC date and time of day, to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl Civil {
    /// `20261202T034238`: as names that sort by time write it.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// The UTC date and time of day of seconds since the epoch: Howard Hinnant's days-to-civil
/// algorithm.
pub fn civil(secs: u64) -> Civil {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: rem / 3600,
        minute: rem % 3600 / 60,
        second: rem % 60,
    }
}

/// Seconds since the epoch of an RFC 3339 time as podman writes them
/// (`2026-12-06T11:15:02.123456789Z`, or with an offset such as `+01:00`); the fraction is
/// dropped. None for anything else.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let (date, rest) = text.split_once('T')?;
    let mut ymd = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (ymd.next()?.ok()?, ymd.next()?.ok()?, ymd.next()?.ok()?);
    let clock_len = 8;
    let clock = rest.get(..clock_len)?;
    let mut hms = clock.splitn(3, ':').map(str::parse::<i64>);
    let (hh, mm, ss) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let zone = rest[clock_len..].trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.get(..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let (oh, om) = zone.get(1..)?.split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    let valid = (1..=12).contains(&month) && (1..=31).contains(&day) && hh < 24 && mm < 60;
    valid.then(|| days_from_civil(year, month, day) * 86_400 + hh * 3600 + mm * 60 + ss - offset)
}

/// Days since the epoch of a UTC date: the inverse of `civil`'s date part.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::{Clock, SystemClock};

    #[test]
    fn this_boot_has_an_id_and_its_clock_moves_forward() {
        let a = SystemClock.boot_time().expect("boot time");
        let b = SystemClock.boot_time().expect("boot time");
        assert_eq!(a.boot_id.len(), 36, "a UUID: {}", a.boot_id);
        assert_eq!(a.boot_id, b.boot_id);
        assert!(b.since_boot >= a.since_boot && a.since_boot > std::time::Duration::ZERO);
    }

    #[test]
    fn known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_798_761_600), "2027-01-01T00:00:00Z");
    }

    #[test]
    fn podmans_times_parse_back() {
        use super::parse_rfc3339 as parse;
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse("2027-01-01T00:00:00.123456789Z"), Some(1_798_761_600));
        assert_eq!(parse("2027-01-01T01:30:00.5+01:30"), Some(1_798_761_600));
        assert_eq!(parse("2026-12-31T23:00:00-01:00"), Some(1_798_761_600));
        for secs in [951_782_400_u64, 1_709_164_800, 4_102_444_799] {
            assert_eq!(parse(&super::rfc3339(secs)), i64::try_from(secs).ok());
        }
        for bad in [
            "",
            "2027-01-01",
            "2027-13-01T00:00:00Z",
            "2027-01-01T00:00:00",
            "x",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
