//! Nothing but features: the ones the workspace's tests build the binary's dependencies
//! with, given to the binary's own build (see this crate's `Cargo.toml`).
