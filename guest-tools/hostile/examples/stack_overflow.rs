// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        Ok(format!("depth {}", recurse(std::hint::black_box(u64::MAX))))
    }
}

/// Not tail-recursive, so every level takes a real frame on the wasm stack.
fn recurse(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let below = std::hint::black_box(recurse(std::hint::black_box(n - 1)));
    below.wrapping_mul(31).wrapping_add(n)
}

hostile::export!(Hostile);
