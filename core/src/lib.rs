//! refit-core: every piece of refit's logic. The module binaries and refitctl are thin shells
//! around it.

pub mod ansible;
pub mod container_unit;
pub mod converge;
pub mod datastep;
pub mod flow;
pub mod host;
pub mod logging;
pub mod migrate;
pub mod order;
pub mod parallel;
pub mod param_path;
pub mod plan;
pub mod podman;
pub mod poll;
pub mod progress;
pub mod quadlet;
pub mod reference;
pub mod registry;
pub mod results;
pub mod scope;
pub mod state;
pub mod stop_services;
pub mod systemd;
#[cfg(test)]
pub mod testing;
pub mod time;
pub mod unit;
