//! The guest components of `guest-tools/`, built for `wasm32-wasip2` by this
//! crate's build script: the default `json-text` formatter (path and embedded
//! bytes), the sample calendar tool component, the `calendar-text` formatter (agenda
//! lines for calendar results), and the hostile components the tests use (paths in
//! [`hostile`]).

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
// Shared with the build script, which includes the same file.
include!("host_build_vars.rs");
