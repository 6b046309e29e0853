//! The unit a target should become: its text, its own and effective revisions, and the image
//! it runs.

use crate::podman::ImageRef;
use crate::unit::dropins::{DropIn, revision_with};
use crate::unit::render::RenderError;
use crate::unit::revision::with_revision_label;
use crate::unit::{ImageSource, Kind, UnitFile};

#[derive(Debug, Clone)]
pub struct Desired {
    pub unit: UnitFile,
    pub kind: Kind,
    /// The unit's own revision: its text and drop-ins.
    pub own: String,
    /// The effective revision (`unit::graph`): the own revision, and those of the units it
    /// refers to. What a container's label carries and what decides a restart.
    pub revision: String,
    /// The image a container runs; None for the other kinds, and until a unit that names it
    /// (`image_unit`) is resolved.
    pub image: Option<ImageRef>,
    /// The `.image` or `.build` unit the container's image comes from.
    pub image_unit: Option<String>,
    pub needs_health: bool,
}

impl Desired {
    /// A unit as rendered: its revision is its own until the graph gives the effective one.
    pub fn from_unit(
        unit: UnitFile,
        kind: Kind,
        image: Option<ImageSource>,
        dropins: &[DropIn],
    ) -> Self {
        let own = revision_with(&unit, dropins);
        let (image, image_unit) = match image {
            Some(ImageSource::Ref(r)) => (Some(r), None),
            Some(ImageSource::Unit(u)) => (None, Some(u)),
            None => (None, None),
        };
        let mut d = Desired {
            needs_health: unit
                .value("Container", "HealthCmd")
                .is_some_and(|v| !v.is_empty() && v != "none"),
            unit,
            kind,
            revision: own.clone(),
            own,
            image,
            image_unit,
        };
        d.set_revision(d.revision.clone());
        d
    }

    /// A revision refit recorded: its text, the image it ran and its effective revision.
    pub fn recorded(
        unit: UnitFile,
        kind: Kind,
        image_ref: &str,
        revision: &str,
    ) -> Result<Self, RenderError> {
        let image = match image_ref {
            "" => None,
            r => Some(ImageSource::Ref(ImageRef::parse(r)?)),
        };
        let mut d = Desired::from_unit(unit, kind, image, &[]);
        d.set_revision(revision.to_string());
        Ok(d)
    }

    /// Sets the effective revision; a container's label names it.
    pub fn set_revision(&mut self, revision: String) {
        if self.kind.runs_container() {
            self.unit = with_revision_label(&self.unit, &revision);
        }
        self.revision = revision;
    }

    /// Whether the image is built on this host by a `.build` unit, not pulled.
    pub fn built(&self) -> bool {
        self.image_unit
            .as_deref()
            .is_some_and(|u| u.ends_with(".build"))
    }

    /// The image reference as results and history name it; empty for a unit that runs none.
    pub fn image_ref(&self) -> String {
        self.image
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    pub fn text(&self) -> String {
        self.unit.render()
    }
}
