//! What each module returns, as types both ends share: a module serializes one into its
//! result, and refitctl reads the same type back, so a key renamed on one side fails the build
//! of the other instead of reading as missing.

pub mod container_unit;
pub mod flow_state;
pub mod run_migrations;
pub mod stop_services;

#[cfg(test)]
mod tests;
