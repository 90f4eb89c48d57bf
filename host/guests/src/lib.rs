//! The guest components of `guest-tools/`, built for `wasm32-wasip2` by this
//! crate's build script: the default `json-text` formatter (path and embedded
//! bytes), the sample calendar tool component, the `calendar-text` formatter (agenda
//! lines for calendar results), and the hostile components the tests use (paths in
//! [`hostile`]).
//!
//! # Layout
//!
//! * the constants of the build script's `guests.rs` (one `_PATH` per component, and the
//!   bytes of those the host embeds), and [`hostile`], a namespace of the hostile
//!   fixtures' paths, one constant per example of `guest-tools/hostile`;
//! * `host_build_vars.rs`, shared with the build script: [`HOST_BUILD_VARS`], what a
//!   nested cargo must not inherit.

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
// Shared with the build script, which includes the same file.
include!("host_build_vars.rs");
