// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        // Waits on WASI timers (`subscribe-duration`, then `pollable.block`) instead of
        // spinning: no wasm runs while a host timer sleeps, so no epoch check either.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

hostile::export!(Hostile);
