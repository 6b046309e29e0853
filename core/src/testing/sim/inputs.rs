//! The sim's outside inputs: another tool's secrets, and the host state a container refuses to
//! start on (a config file or secret saying something bad).

use super::SimHost;

impl SimHost {
    /// From now on, a container started while `bad` says yes of the host exits at once.
    pub fn crash_while(&self, bad: impl Fn(&SimHost) -> bool + Send + 'static) {
        self.crash_while
            .lock()
            .expect("crash_while")
            .push(Box::new(bad));
    }

    /// Another tool sets secret `name` to `value`, at `updated_at`.
    pub fn set_foreign_secret(&self, name: &str, value: &str, updated_at: i64) {
        let mut listed = self.foreign_secrets.lock().expect("secrets");
        listed.retain(|s| s.name != name);
        listed.push(crate::podman::SecretInfo {
            name: name.into(),
            unit: None,
            updated_at: Some(updated_at),
        });
        let mut values = self.secret_values.lock().expect("values");
        values.insert(name.into(), value.into());
    }
}
