//! Hostile formatter components for wasmgate's tests. Each example in
//! `examples/` is one component that tries exactly one thing a malicious
//! formatter might: escape to the filesystem, the environment or the network,
//! or exhaust time, memory, stack or output.
//!
//! The convention: when the attempt *succeeds*, the component returns the loot
//! as `Ok(text)`; when the sandbox stops it in a way the guest can observe,
//! the component reports the denial as `Err(internal(..))` with the error it
//! saw. Limits that end the guest (deadline, memory, stack) never return.
//!
//! One example is not a formatter: `tool_provider` is a hostile tool-provider
//! component with its own bindings, and does not use this library.

// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    world: "formatter",
    path: "../../wit",
    pub_export_macro: true,
    default_bindings_module: "hostile",
});

pub use exports::wasmgate::sandbox::format::{FormatError, Guest, ToolResult};

/// Turns an I/O failure into the denial report the tests look for.
pub fn denied(what: &str, err: impl std::fmt::Display) -> FormatError {
    FormatError::Internal(format!("{what}: {err}"))
}
