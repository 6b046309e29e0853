//! The Ansible module protocol: the args file, the argument spec, validation and coercion,
//! `no_log` masking and the result object. It knows nothing of units, systemd or podman.

pub mod detach;
pub mod doc;
pub mod driver;
pub mod entry;
pub mod keep;
pub mod mask;
pub mod result;
pub mod spec;
pub mod validate;

pub use driver::Invocation;
pub use entry::run;
pub use result::{Diff, Outcome};
pub use spec::{Default, Elem, Kind, ModuleSpec, OptionSpec, RequiredIf, Rules};
