//! Rolling a target back after a failure: to the revision that last converged, text and image
//! ID, as refit recorded it. Never to the file on disk, which `state: present`, a hand edit or
//! an interrupted run may already have replaced with the revision that failed.
//!
//! A rollback that cannot bring the previous revision back says what runs now, what is on
//! disk and how to put it back; it is never reported as done.

use super::UnitError;
use super::jobs::{Jobs, record, write_unit};
use super::observe::{Observation, RevisionImage};
use super::report::Report;
use super::target::{Desired, Target};
use crate::converge::short;
use crate::state::{RevisionRecord, StateDir, read_optional, remove_file};
use crate::systemd::Job;
use crate::time::now_rfc3339;
use crate::unit::{UnitFile, revision};

/// A target to roll back and what that takes: the host and the run's settings, the state dir,
/// what was observed before the run, the revision that failed, and the services the run
/// queued a job for (only those go back).
pub struct Rollback<'a> {
    pub jobs: Jobs<'a>,
    pub state: &'a StateDir,
    pub target: &'a Target,
    pub observed: &'a Observation,
    pub failed: RevisionImage,
    pub replaced: &'a [String],
}

#[derive(Debug, thiserror::Error)]
enum RollbackError {
    #[error("refit has no earlier revision of {0} that ran, so there is nothing to go back to")]
    NothingEarlier(String),
    /// The run restarted the revision that already ran, on the same image, and no outside
    /// input (a file in `restart_on_change`, a secret another tool set) differs from the
    /// version that last ran. Going back to an older revision would undo an earlier change
    /// that worked.
    #[error(
        "{unit} failed on the text and image it already ran (revision {revision}), so refit changed nothing of its own to put back; what changed is outside it (a file in restart_on_change, a secret another tool set, or the host): put that back with the tool that changed it, then run the update again, which restarts exactly its users"
    )]
    NothingChanged { unit: String, revision: String },
    /// As `NothingChanged`, after an outside input changed that refit has no earlier version
    /// of: none converged with it yet (the first run after a takeover), or its copy is gone.
    #[error(
        "{unit} failed on the text and image it already ran (revision {revision}) after {input} changed, and refit keeps no version of it that ran (it keeps one from the first run that converges with it): put it back with the tool that changed it, then run the update again, which restarts exactly its users"
    )]
    InputNotKept {
        unit: String,
        revision: String,
        input: String,
    },
    #[error("the image {image} (ID {id}) that revision {revision} ran is no longer on the host")]
    ImageGone {
        image: String,
        id: String,
        revision: String,
    },
    #[error("the recorded revision {revision} does not parse: {detail}")]
    BadRecord { revision: String, detail: String },
    #[error("the previous revision did not come back either: {source}")]
    NotBack {
        #[source]
        source: crate::converge::WaitError,
    },
    #[error(transparent)]
    Host(#[from] UnitError),
}

impl Rollback<'_> {
    /// Rolls back, notes the outcome in the report, and returns the sentence for the message.
    pub fn noted(&self, report: &mut Report) -> String {
        let (t, obs, replaced) = (self.target, self.observed, self.replaced);
        match self.roll_back() {
            Ok(note) => {
                report.result.rolled_back = true;
                report.result.actions.push("rollback".into());
                note
            }
            Err(RollbackError::NothingEarlier(unit)) => {
                // Nothing of this unit ever converged: its new revision must not be left
                // running. A unit this run installed goes too, as before the run.
                let first_install = obs.file_text.is_none();
                let what = match self.stop_new(t, replaced, first_install) {
                    Ok(()) if first_install => {
                        "its new unit file was removed and its services stopped".to_string()
                    }
                    Ok(()) => "its services were stopped".to_string(),
                    Err(e) => format!("stopping it failed too: {e}"),
                };
                format!("{}; {what}", RollbackError::NothingEarlier(unit))
            }
            Err(
                e @ (RollbackError::NothingChanged { .. } | RollbackError::InputNotKept { .. }),
            ) => e.to_string(),
            Err(e) => format!(
                "The rollback failed: {e}. {}",
                self.how_it_stands(t, replaced)
            ),
        }
    }

    /// Restores the revision that ran before `failed`, and brings the `replaced` services back
    /// to the state they were in. Services this run never touched are left as they are.
    fn roll_back(&self) -> Result<String, RollbackError> {
        let (t, obs, failed, replaced) = (self.target, self.observed, &self.failed, self.replaced);
        let unit_file = t.name.file_name();
        if obs
            .history
            .current()
            .is_some_and(|c| c.is(&failed.revision, failed.image_id.as_deref()))
        {
            return self.put_inputs_back(unit_file, failed);
        }
        let mut history = self
            .state
            .unit_history(&unit_file)
            .map_err(UnitError::from)?;
        let back = history
            .last_other_than(&failed.revision, failed.image_id.as_deref())
            .cloned()
            .or_else(|| ran_from_disk(obs, failed))
            .ok_or_else(|| RollbackError::NothingEarlier(unit_file.clone()))?;
        let bad = |detail: String| RollbackError::BadRecord {
            revision: short(&back.revision).to_string(),
            detail,
        };
        let prev = Desired::recorded(
            UnitFile::parse(&back.text).map_err(|e| bad(e.to_string()))?,
            t.name.kind(),
            &back.image_ref,
            &back.revision,
        )
        .map_err(|e| bad(e.to_string()))?;
        let podman = self.jobs.host.podman;
        let image_id = match (&back.image_id, &prev.image) {
            (_, None) => None,
            (Some(id), Some(image)) => {
                if podman.image_id(id).map_err(UnitError::from)?.is_none() {
                    return Err(RollbackError::ImageGone {
                        image: back.image_ref.clone(),
                        id: short(id).to_string(),
                        revision: short(&back.revision).to_string(),
                    });
                }
                podman.tag(id, image.as_str()).map_err(UnitError::from)?;
                Some(id.clone())
            }
            (None, Some(image)) => podman.image_id(image.as_str()).map_err(UnitError::from)?,
        };
        // The failed revision stops first: a crash-looping one has a restart of its own
        // scheduled, which would otherwise interleave with the rollback's start (or, after the
        // reload, start the old text on its own), and be taken for a crash loop of it.
        self.jobs.stop_all(replaced)?;
        history.written = Some(prev.revision.clone());
        self.state
            .save_unit_history(&unit_file, &history)
            .map_err(UnitError::from)?;
        write_unit(t, &prev.text()).map_err(UnitError::from)?;
        let held = self.hold_image_tag(&prev, image_id.as_deref())?;
        self.jobs
            .host
            .systemd
            .daemon_reload()
            .map_err(UnitError::from)?;
        let running = self.start_again(&prev, image_id.clone())?;
        history.forget(&failed.revision, failed.image_id.as_deref());
        if !running.is_empty() {
            history.record(record(&prev, image_id.clone()));
        }
        self.state
            .save_unit_history(&unit_file, &history)
            .map_err(UnitError::from)?;
        let runs = if replaced.is_empty() {
            "its services were not touched".to_string()
        } else if running.is_empty() {
            "it had not run before, so it is stopped again".to_string()
        } else {
            format!("{} runs it again", running.join(", "))
        };
        let held = held
            .map(|unit| {
                format!(" {unit} holds its tag on that image at boot until a run converges.")
            })
            .unwrap_or_default();
        Ok(format!(
            "Rolled back to revision {} (image {}); {runs}.{held}",
            short(&prev.revision),
            short(image_id.as_deref().unwrap_or("?"))
        ))
    }

    /// The run restarted the revision that already ran, on the same image: what it ran on that
    /// changed is an outside input. The version of each that last ran goes back, and the
    /// services this run restarted start on it again.
    fn put_inputs_back(
        &self,
        unit: String,
        failed: &RevisionImage,
    ) -> Result<String, RollbackError> {
        let (t, obs) = (self.target, self.observed);
        let revision = short(&failed.revision).to_string();
        let input_changed = obs.services.iter().any(|s| {
            s.container
                .as_ref()
                .is_some_and(|c| !super::inputs::changed(&obs.inputs, c.started_at).is_empty())
        });
        let nothing = |unit, revision| RollbackError::NothingChanged { unit, revision };
        let Some(d) = t.desired.as_ref().filter(|_| !obs.inputs.is_empty()) else {
            return Err(nothing(unit, revision));
        };
        let host = self.jobs.host;
        let put_back = match super::kept_inputs::restore(host, self.state, t, &obs.inputs) {
            Ok(put_back) => put_back,
            Err(super::kept_inputs::KeptError::NotKept(input)) => {
                return Err(RollbackError::InputNotKept {
                    unit,
                    revision,
                    input,
                });
            }
            Err(super::kept_inputs::KeptError::Host(e)) => return Err(e.into()),
        };
        if put_back.is_empty() && !input_changed {
            return Err(nothing(unit, revision));
        }
        self.jobs.stop_all(self.replaced)?;
        let running = self.start_again(d, failed.image_id.clone())?;
        let what = if put_back.is_empty() {
            "the inputs it last ran with were back already".to_string()
        } else {
            format!(
                "put back the version that last ran of {}",
                put_back.join(", ")
            )
        };
        let runs = if running.is_empty() {
            "its services were not running before, so they stay stopped".to_string()
        } else {
            format!(
                "{} runs it again on revision {revision}",
                running.join(", ")
            )
        };
        Ok(format!("Rolled back: {what}; {runs}."))
    }

    /// Starts the replaced services that ran before the run on `d` and waits for each to
    /// converge; returns those started.
    fn start_again(
        &self,
        d: &Desired,
        image_id: Option<String>,
    ) -> Result<Vec<String>, RollbackError> {
        let mut running = Vec::new();
        for svc in self
            .replaced
            .iter()
            .filter(|s| self.observed.service(s).is_some_and(|o| o.active))
        {
            let before = self.jobs.begin(svc, Job::Start)?;
            self.jobs
                .wait(svc, d, image_id.clone(), before, &|| {})
                .map_err(|source| RollbackError::NotBack { source })?;
            running.push(svc.clone());
        }
        Ok(running)
    }

    /// A container whose tag an `.image` unit pulls at every boot keeps the image it went
    /// back to across a reboot (`image_hold`); the caller's reload makes it count. Returns the
    /// `.image` unit that holds.
    fn hold_image_tag(
        &self,
        prev: &Desired,
        image_id: Option<&str>,
    ) -> Result<Option<String>, RollbackError> {
        let t = self.target;
        let Some(d) = t.desired.as_ref() else {
            return Ok(None);
        };
        let (Some(unit), Some(id), Some(image)) = (
            d.image_unit.as_deref().filter(|u| u.ends_with(".image")),
            image_id,
            prev.image.as_ref().filter(|i| Some(*i) == d.image.as_ref()),
        ) else {
            return Ok(None);
        };
        let Some(dir) = t.path.parent() else {
            return Ok(None);
        };
        super::image_hold::hold(dir, unit, &t.name.file_name(), image.as_str(), id)
            .map_err(UnitError::from)?;
        Ok(Some(unit.to_string()))
    }

    /// A unit with no revision that ever ran, and failed: its services stop, and a unit file
    /// this run installed goes, as before the run.
    fn stop_new(&self, t: &Target, replaced: &[String], remove: bool) -> Result<(), UnitError> {
        self.jobs.stop_all(replaced)?;
        if remove {
            remove_file(&t.path)?;
            self.jobs.host.systemd.daemon_reload()?;
        }
        Ok(())
    }

    /// What runs now and what is on disk, and the commands that put the unit back, for a
    /// rollback that did not go through.
    fn how_it_stands(&self, t: &Target, replaced: &[String]) -> String {
        let services = if replaced.is_empty() {
            t.services()
        } else {
            replaced.to_vec()
        };
        let host = self.jobs.host;
        let statuses = host.systemd.show(&services).unwrap_or_default();
        let containers = host.podman.unit_containers(&services).ok();
        let now: Vec<String> = statuses
            .iter()
            .map(|st| {
                let running = containers.as_ref().and_then(|cs| {
                    cs.iter()
                        .find(|c| c.unit == st.name && c.running())
                        .map(|c| {
                            format!(
                                ", running revision {} on image {}",
                                short(c.revision.as_deref().unwrap_or("?")),
                                short(&c.image_id)
                            )
                        })
                });
                format!(
                    "{} is {}/{}{}",
                    st.name,
                    st.active_state(),
                    st.get("SubState"),
                    running.unwrap_or_else(|| ", with no running container".into())
                )
            })
            .collect();
        let on_disk = match read_optional(&t.path) {
            Ok(Some(text)) => match UnitFile::parse(&text) {
                Ok(u) => format!("revision {}", short(&revision(&u))),
                Err(_) => "a file that does not parse".into(),
            },
            Ok(None) => "no file".into(),
            Err(e) => format!("unreadable ({e})"),
        };
        format!(
            "Now: {}; on disk at {}: {on_disk}. To put back the revision that last ran, once \
             its cause is fixed: `refitctl rollback {}`, or container_unit with name={} and \
             state=rolled_back; `refitctl status` shows the host.",
            now.join("; "),
            t.path.display(),
            t.name.stem().trim_end_matches('@'),
            t.name.stem()
        )
    }
}

/// For a unit refit has no converged record of: the file as it was before this run, if the
/// running container shows that revision ran (a unit deployed before refit kept history).
fn ran_from_disk(obs: &Observation, failed: &RevisionImage) -> Option<RevisionRecord> {
    let (text, rev) = (obs.file_text.as_ref()?, obs.file_revision.as_ref()?);
    let ran = obs.running_pair()?;
    if ran.revision != *rev || *rev == failed.revision {
        return None;
    }
    let unit = UnitFile::parse(text).ok()?;
    let image_ref = unit.value("Container", "Image")?.to_string();
    Some(RevisionRecord {
        revision: rev.clone(),
        text: text.clone(),
        image_ref,
        image_id: ran.image_id,
        recorded_at: now_rfc3339(),
        stream: None,
    })
}
