//! The quadlet unit model (every kind): names, parsing and rendering, canonical text and the
//! revision hash. Pure code: it reads and writes no files.

pub mod dropins;
pub mod file;
#[cfg(test)]
mod grammar_tests;
pub mod graph;
pub mod kind;
pub mod name;
pub mod render;
pub mod revision;
pub mod socket;
pub mod words;

pub use file::{Entry, UnitFile};
pub use kind::Kind;
pub use name::UnitName;
pub use render::{ContainerOptions, ImageSource, RenderedUnit, render, render_kind};
pub use revision::{REVISION_LABEL, revision};
