// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use hostile::{FormatError, Guest, ToolResult};

/// Tries to carry state from one call to the next.
static CALLS: AtomicU32 = AtomicU32::new(0);

struct Hostile;

impl Guest for Hostile {
    fn format(result: ToolResult) -> Result<String, FormatError> {
        let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("call {n} saw {}", result.tool_name))
    }
}

hostile::export!(Hostile);
