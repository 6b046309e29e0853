//! The names of refit's podman secrets: a keyed hash of (unit, key, value) under the host key
//! kept 0600 in the state dir, so a name in a readable unit file lets no one test guesses of
//! the value; and the names a unit's text refers to. secrets.rs creates and removes them.

use crate::state::{StateDir, StateError, io_err};
use crate::unit::{UnitFile, UnitName};
use sha2::{Digest, Sha256};
use std::io::Read;

/// Every name refit gives a secret starts so; names a unit's text holds that start so are
/// refit's to create, check and remove.
const PREFIX: &str = "refit-";

/// The host key of the keyed hash.
#[derive(Clone, Default)]
pub struct SecretKey([u8; 32]);

impl SecretKey {
    /// For validation alone, before the host is touched: names computed with it are never
    /// written or created.
    pub fn placeholder() -> Self {
        SecretKey::default()
    }

    /// A digest of `parts` keyed with the host key: it tells one value from another, and lets
    /// no one who reads it test guesses of a value.
    pub fn digest(&self, parts: &[&[u8]]) -> String {
        let mut h = Sha256::new();
        h.update(self.0);
        for part in parts {
            h.update(part);
            h.update([0]);
        }
        crate::unit::revision::hex(&h.finalize()[..16])
    }

    /// The host's key; check mode on a host that never had one gets the placeholder, as
    /// nothing it names is created.
    pub fn load(state: &StateDir, create: bool) -> Result<Self, StateError> {
        let path = state.secret_key_file();
        match read_private(&path)? {
            Ok(text) => parse_key(&text).ok_or(StateError::Corrupt {
                path,
                detail: "the secret key is not 64 hex digits".into(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => {
                Ok(SecretKey::placeholder())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                state.ensure("")?;
                let mut bytes = [0u8; 32];
                std::fs::File::open("/dev/urandom")
                    .and_then(|mut f| f.read_exact(&mut bytes))
                    .map_err(io_err("read", std::path::Path::new("/dev/urandom")))?;
                let hex = crate::unit::revision::hex(&bytes);
                // Created once, with O_EXCL: a run that loses the race reads the winner's key.
                match crate::state::create_new(&path, hex.as_bytes(), 0o600) {
                    Ok(()) => Ok(SecretKey(bytes)),
                    Err(_) if path.exists() => SecretKey::load(state, false),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(io_err("read", &path)(e)),
        }
    }
}

/// The key file's text, read without following a symlink; a key that is not a plain file of
/// this user, unreadable by everyone else, is refused: whoever reads it can test guesses of
/// every secret value. The inner result is the open's own (NotFound: no key yet).
fn read_private(path: &std::path::Path) -> Result<std::io::Result<String>, StateError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(StateError::Symlink(path.to_path_buf()));
        }
        Err(e) => return Ok(Err(e)),
    };
    let m = file.metadata().map_err(io_err("inspect", path))?;
    let me = rustix::process::geteuid().as_raw();
    let detail = if !m.is_file() {
        Some("not a plain file".to_string())
    } else if m.uid() != me {
        Some(format!(
            "owned by uid {}, not by uid {me} that runs refit",
            m.uid()
        ))
    } else if m.mode() & 0o077 != 0 {
        Some(format!(
            "readable or writable by others (mode {:o})",
            m.mode() & 0o7777
        ))
    } else {
        None
    };
    if let Some(detail) = detail {
        return Err(StateError::NotPrivate {
            path: path.to_path_buf(),
            detail: format!(
                "a secret key {detail}; make it 0600 and root's, or remove it and redeploy every unit with secret_env"
            ),
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(io_err("read", path))?;
    Ok(Ok(text))
}

fn parse_key(text: &str) -> Option<SecretKey> {
    let text = text.trim();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(SecretKey(out))
}

/// The podman secret that holds `value` for `env` of `unit`.
pub fn secret_name(key: &SecretKey, unit: &UnitName, env: &str, value: &str) -> String {
    let mut h = Sha256::new();
    for part in [&key.0[..], unit.file_name().as_bytes(), env.as_bytes()] {
        h.update(part);
        h.update([0]);
    }
    h.update(value.as_bytes());
    let digest = crate::unit::revision::hex(&h.finalize()[..8]);
    let stem: String = unit
        .stem()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{PREFIX}{stem}-{}-{digest}", env.to_ascii_lowercase())
}

/// One secret a unit needs created: its name and its value, which Debug never shows.
#[derive(Clone, PartialEq, Eq)]
pub struct UnitSecret {
    pub name: String,
    pub env: String,
    pub value: String,
}

impl std::fmt::Debug for UnitSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UnitSecret({} for {})", self.name, self.env)
    }
}

/// The secrets `secret_env` asks for.
pub fn of(
    key: &SecretKey,
    unit: &UnitName,
    secret_env: &serde_json::Map<String, serde_json::Value>,
) -> Vec<UnitSecret> {
    secret_env
        .iter()
        .map(|(env, v)| {
            let value = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            UnitSecret {
                name: secret_name(key, unit, env, &value),
                env: env.clone(),
                value,
            }
        })
        .collect()
}

/// Whether `name` is one refit gives the secrets of `secret_env`.
pub fn is_refits(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The refit secret names a unit text refers to.
pub fn referenced(text: &str) -> Vec<String> {
    let Ok(u) = UnitFile::parse(text) else {
        return Vec::new();
    };
    named(&u)
        .filter(|n| is_refits(n))
        .map(str::to_string)
        .collect()
}

/// The secret names a unit's `Secret=` lines give (each line's first field), as written.
pub fn named(u: &UnitFile) -> impl Iterator<Item = &str> {
    u.values("Container", "Secret")
        .filter_map(|v| v.split(',').next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_change_with_the_value_and_hide_it() {
        let key = SecretKey([7; 32]);
        let unit = UnitName::parse("worker@").expect("name");
        let a = secret_name(&key, &unit, "PW", "hunter22");
        assert!(a.starts_with("refit-worker--pw-"), "{a}");
        assert!(!a.contains("hunter22"));
        assert_ne!(a, secret_name(&key, &unit, "PW", "hunter23"));
        assert_ne!(a, secret_name(&SecretKey([8; 32]), &unit, "PW", "hunter22"));
        assert_eq!(
            referenced(&format!(
                "[Container]\nSecret={a},type=env,target=PW\nSecret=mine\n"
            )),
            vec![a]
        );
    }

    #[test]
    fn the_host_key_is_created_once_0600() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(d.path());
        let first = SecretKey::load(&state, true).expect("created");
        let again = SecretKey::load(&state, true).expect("read");
        assert_eq!(first.0, again.0);
        let mode = std::fs::metadata(d.path().join("secret-key"))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_key_behind_a_symlink_or_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tempdir");
        let state = StateDir::new(d.path().join("state"));
        SecretKey::load(&state, true).expect("created");
        let key = state.secret_key_file();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = SecretKey::load(&state, false)
            .err()
            .expect("open key refused");
        assert!(
            err.to_string().contains("readable or writable by others"),
            "{err}"
        );
        std::fs::rename(&key, d.path().join("elsewhere")).expect("move");
        std::os::unix::fs::symlink(d.path().join("elsewhere"), &key).expect("link");
        let err = SecretKey::load(&state, false).err().expect("link refused");
        assert!(matches!(err, StateError::Symlink(_)), "{err}");
    }
}
