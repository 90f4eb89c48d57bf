// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

// The raw WASI import that `std::thread::sleep` uses (the version Rust's std links
// against): each call makes a pollable the host keeps in its resource table until
// the guest drops it. This guest never does.
#[link(wasm_import_module = "wasi:clocks/monotonic-clock@0.2.6")]
unsafe extern "C" {
    #[link_name = "subscribe-duration"]
    fn subscribe_duration(nanoseconds: i64) -> i32;
}

/// More host resources than the sandbox lets one call hold.
const HOARD: u32 = 100_000;

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        let mut held = 0u32;
        for _ in 0..HOARD {
            // SAFETY: the import takes a duration and returns a handle; nothing else.
            std::hint::black_box(unsafe { subscribe_duration(0) });
            held += 1;
        }
        Ok(format!("held {held} pollables"))
    }
}

hostile::export!(Hostile);
