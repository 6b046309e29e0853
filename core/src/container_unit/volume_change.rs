//! A changed `.volume` unit, judged before anything is touched. quadlet's volume service
//! creates the volume only when it is missing (`podman volume create --ignore`), and podman
//! 5.4 changes no option of a volume that exists: a new driver, device, mount option, owner,
//! image, copy flag or label takes a new volume. refit never removes a volume or its data, so
//! a run that changes such an option of a volume podman has is refused, naming the option.
//! What stays allowed: the unit's other sections (`[Unit]`, `[Service]`, `[Install]`), which
//! shape only the service; the options of how podman is called; and a new `VolumeName=`,
//! which names another volume and leaves the old one as it is.

use super::error::NeedsRecreation;
use super::{Host, Target, UnitError};
use crate::plan::Wanted;
use crate::state::read_optional;
use crate::unit::{Kind, UnitFile};

const SECTION: &str = "Volume";

/// `[Volume]` options whose change podman applies without recreating the volume: they say how
/// podman is called, not what the volume is.
const NOT_THE_VOLUME: [&str; 2] = ["GlobalArgs", "ContainersConfModule"];

/// Refuses a run that would change an option of an existing volume podman cannot change in
/// place. Reads the unit files on disk and asks podman whether the volume exists; changes
/// nothing.
pub fn refuse_recreation(host: &Host, targets: &[Target]) -> Result<(), UnitError> {
    for t in targets {
        if t.name.kind() != Kind::Volume
            || !matches!(
                t.wanted,
                Wanted::Present | Wanted::Started | Wanted::Restarted
            )
        {
            continue;
        }
        let Some(d) = &t.desired else { continue };
        let Some(text) = read_optional(&t.path)? else {
            continue;
        };
        // A file that does not parse is replaced, as any unit's is.
        let Ok(old) = UnitFile::parse(&text) else {
            continue;
        };
        let Some(option) = changed_option(&old, &d.unit) else {
            continue;
        };
        let volume = volume_name(&d.unit, t.name.stem());
        if host.podman.volume_exists(&volume)? {
            return Err(NeedsRecreation {
                unit: t.name.file_name(),
                option,
                volume,
            }
            .into());
        }
    }
    Ok(())
}

/// The first `[Volume]` option whose values differ between `old` and `new` and that shapes the
/// volume; None when none does, or when `new` names another volume.
fn changed_option(old: &UnitFile, new: &UnitFile) -> Option<String> {
    changed_resource_option(SECTION, "VolumeName", &NOT_THE_VOLUME, old, new)
}

/// The first option of `section` whose values differ between `old` and `new`, leaving out
/// `ignored` (options that say how podman is called); None when none differs, or when the
/// option `name_key` differs, so that `new` names another resource. Shared with `.network`s.
pub(super) fn changed_resource_option(
    section: &str,
    name_key: &str,
    ignored: &[&str],
    old: &UnitFile,
    new: &UnitFile,
) -> Option<String> {
    if old.value(section, name_key) != new.value(section, name_key) {
        return None;
    }
    let keys = |u: &UnitFile| -> Vec<String> {
        u.section(section)
            .map(|s| s.entries.iter().map(|e| e.key.clone()).collect())
            .unwrap_or_default()
    };
    let mut all = keys(new);
    all.extend(keys(old));
    all.into_iter()
        .filter(|k| !ignored.contains(&k.as_str()))
        .find(|k| {
            let of = |u: &UnitFile| u.values(section, k).map(str::to_string).collect::<Vec<_>>();
            of(old) != of(new)
        })
}

/// The volume quadlet makes of `stem.volume`: its `VolumeName=`, else `systemd-STEM`.
fn volume_name(unit: &UnitFile, stem: &str) -> String {
    resource_name(SECTION, "VolumeName", unit, stem)
}

/// The name podman knows a resource of `stem` by: the unit's `name_key` in `section`, else
/// `systemd-STEM`, as quadlet names volumes and networks.
pub(super) fn resource_name(section: &str, name_key: &str, unit: &UnitFile, stem: &str) -> String {
    unit.value(section, name_key)
        .map(str::to_string)
        .unwrap_or_else(|| format!("systemd-{stem}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(text: &str) -> UnitFile {
        UnitFile::parse(text).expect("parses")
    }

    #[test]
    fn an_option_that_shapes_the_volume_is_named() {
        let old = unit("[Volume]\nDriver=local\nLabel=tier=a\n");
        assert_eq!(
            changed_option(&old, &unit("[Volume]\nDriver=local\nLabel=tier=b\n")),
            Some("Label".into())
        );
        assert_eq!(
            changed_option(&old, &unit("[Volume]\nLabel=tier=a\n")),
            Some("Driver".into()),
            "an option taken away is a change too"
        );
        assert_eq!(
            changed_option(
                &old,
                &unit("[Volume]\nDriver=local\nLabel=tier=a\nOptions=uid=1\n")
            ),
            Some("Options".into())
        );
    }

    #[test]
    fn the_service_sections_the_way_podman_is_called_and_a_new_name_pass() {
        let old = unit("[Volume]\nLabel=tier=a\n");
        let same = unit(
            "# note\n[Unit]\nDescription=data\n[Volume]\nLabel=tier=a\nGlobalArgs=--log-level=debug\n[Install]\nWantedBy=multi-user.target\n",
        );
        assert_eq!(changed_option(&old, &same), None);
        let renamed = unit("[Volume]\nVolumeName=data2\nLabel=tier=b\n");
        assert_eq!(changed_option(&old, &renamed), None);
        assert_eq!(volume_name(&renamed, "data"), "data2");
        assert_eq!(volume_name(&old, "data"), "systemd-data");
    }
}
