//! Fetching: making the desired image local, per the pull policy, before anything is
//! stopped; in check mode, asking the registry whether the tag has moved on.

use super::observe::Observation;
use super::target::Target;
use super::{Host, PullPolicy, UnitError};
use crate::plan::Wanted;
use crate::podman::ImageRef;
use crate::registry::Location;
use crate::state::Held;

/// What the fetch did, or in check mode would do.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// A pull brought an image ID that was not local before.
    pub pulled: bool,
    /// Check mode: the policy calls for a pull that was not done.
    pub pull_due: bool,
    /// Check mode, `pull: always`: why the registry could not be asked.
    pub registry_error: Option<String>,
}

/// Makes the desired image local, per the pull policy, before anything is stopped. In check
/// mode it looks but never pulls.
pub fn fetch(
    host: &Host,
    t: &Target,
    obs: &mut Observation,
    policy: PullPolicy,
    check: bool,
) -> Result<Fetched, UnitError> {
    // A unit that runs no image, or one a `.build` unit builds here, has nothing to fetch.
    let Some(image) = t
        .desired
        .as_ref()
        .filter(|d| !d.built())
        .and_then(|d| d.image.as_ref())
    else {
        return Ok(Fetched::default());
    };
    if let Some(id) = obs.rollback_image_id.clone() {
        // Going back: the reference must name the image the old revision ran again, before
        // anything restarts on it.
        if host.podman.image_id(&id)?.is_none() {
            return Err(UnitError::ImageMissing(format!("{image} (ID {id})")));
        }
        if obs.image_id.as_deref() != Some(id.as_str()) && !check {
            host.podman.tag(&id, image.as_str())?;
        }
        obs.image_id = Some(id);
        return Ok(Fetched::default());
    }
    let local = obs.image_id.clone();
    let pull = match (policy, &local) {
        (PullPolicy::Never, None) => return Err(UnitError::ImageMissing(image.to_string())),
        (PullPolicy::Never, Some(_)) | (PullPolicy::Missing, Some(_)) => false,
        (PullPolicy::Missing, None) | (PullPolicy::Always, _) => t.wanted != Wanted::Stopped,
    };
    if !pull || check {
        let mut out = Fetched {
            pull_due: pull && check && local.is_none(),
            ..Fetched::default()
        };
        // Check mode asks the registry, without pulling, whether the tag has moved on.
        if pull && check && local.is_some() {
            match newer_in_registry(host, image) {
                Ok(newer) => {
                    obs.newer_image = newer;
                    out.pull_due = newer == Some(true);
                }
                Err(e) => out.registry_error = Some(e.to_string()),
            }
        }
        return Ok(out);
    }
    // The registry's digest is the one the local image was pulled as: a pull would bring
    // nothing, and asking for the digest is a tenth of a pull's cost (a no-op update pulls
    // every image). When the registry cannot say, the pull decides.
    if policy == PullPolicy::Always
        && local.is_some()
        && matches!(newer_in_registry(host, image), Ok(Some(false)))
    {
        return Ok(Fetched::default());
    }
    // After a pull the old image loses every tag; a refit-owned tag keeps it findable for a
    // rollback and safe from `podman image prune`.
    if let Some(running) = obs.running_image_id() {
        host.podman.tag(&running, &keep_tag(t))?;
    }
    let id = host.podman.pull(image.as_str())?;
    // A pull that brought the same image changed nothing.
    let pulled = local.as_deref() != Some(id.as_str());
    obs.image_id = Some(id);
    Ok(Fetched {
        pulled,
        ..Fetched::default()
    })
}

/// For a staged run (the flow's preflight): when the unit file on disk names the same tag as
/// the desired text, and the fetch left the tag on another image than the unit ran (or, not
/// running, than the tag named `before` the fetch), the tag goes back to that image, so that a
/// boot, a crash restart or an operator's start before the unit's install runs the revision
/// that fits the data. The new image keeps a refit tag of the unit's (`:staged`), safe from
/// `podman image prune` meanwhile; the plan still goes to it (`obs.image_id`).
pub fn hold(
    host: &Host,
    t: &Target,
    obs: &Observation,
    before: Option<String>,
) -> Result<Option<Held>, UnitError> {
    let (Some(image), Some(new)) = (
        t.desired.as_ref().and_then(|d| d.image.as_ref()),
        &obs.image_id,
    ) else {
        return Ok(None);
    };
    // A unit naming an `.image` unit is never held: the tag it runs is that unit's.
    let on_disk = obs
        .file_text
        .as_deref()
        .and_then(|text| crate::unit::UnitFile::parse(text).ok())
        .and_then(|u| u.value("Container", "Image").map(str::to_string));
    if on_disk.as_deref() != Some(image.as_str()) {
        return Ok(None);
    }
    let Some(ran) = obs.running_image_id().or(before).filter(|ran| ran != new) else {
        return Ok(None);
    };
    if host.podman.image_id(&ran)?.is_none() {
        return Ok(None);
    }
    host.podman
        .tag(new, &format!("{}:staged", keep_repo(t.name.stem())))?;
    crate::podman::point_tag(host.podman, image.as_str(), &ran)?;
    Ok(Some(Held {
        image: image.to_string(),
        id: new.clone(),
    }))
}

/// Where the images of the targets that may pull live: what `pull: always` asks the registry
/// about, all at once, before the first fetch.
pub fn registry_locations(targets: &[Target]) -> Vec<Location> {
    targets
        .iter()
        .filter(|t| t.wanted != Wanted::Stopped)
        .filter_map(|t| t.desired.as_ref())
        .filter(|d| !d.built())
        .filter_map(|d| d.image.as_ref().map(Location::of))
        .collect()
}

/// Whether the registry's digest for the reference is one the local image was not pulled as;
/// None for an image podman recorded no digest of (loaded from an archive, or built here).
/// The digest alone is compared: a short name's image is recorded under the name its alias
/// or mirror resolved to, not the name as written.
fn newer_in_registry(host: &Host, image: &ImageRef) -> Result<Option<bool>, UnitError> {
    let known = host.podman.repo_digests(image.as_str())?;
    if known.is_empty() {
        return Ok(None);
    }
    let remote = host.registry.digest(&Location::of(image))?;
    Ok(Some(!pulled_as(&known, &remote)))
}

/// Whether one of an image's RepoDigests (`NAME@DIGEST`) is `digest`.
fn pulled_as(repo_digests: &[String], digest: &str) -> bool {
    repo_digests
        .iter()
        .any(|rd| rd.rsplit_once('@').is_some_and(|(_, d)| d == digest))
}

/// `localhost/refit-keep/NAME-HASH:previous`: the repository of refit's own tags for the
/// unit, which retention's kept-revision tags share.
fn keep_tag(t: &Target) -> String {
    format!("{}:previous", keep_repo(t.name.stem()))
}

/// The repository of refit's own tags for one unit, which retention.rs keeps images in:
/// `localhost/refit-keep/NAME-HASH`, with NAME reduced to what a repository allows and HASH of
/// the full name, so `app` and `app@` (or `App`) never share one. fetch's `:previous` tag lives
/// in it too.
pub fn keep_repo(stem: &str) -> String {
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let hash = crate::unit::revision::short_hash(stem);
    format!("localhost/refit-keep/{}-{hash}", name.trim_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::pulled_as;

    #[test]
    fn an_image_was_pulled_as_a_digest_under_any_name() {
        let known = vec![
            "127.0.0.1:5001/foreman/db@sha256:aa".to_string(),
            "127.0.0.1:5001/foreman/db@sha256:bb".to_string(),
        ];
        assert!(pulled_as(&known, "sha256:bb"));
        assert!(!pulled_as(&known, "sha256:cc"));
        assert!(!pulled_as(&["no-digest".to_string()], "no-digest"));
    }
}
