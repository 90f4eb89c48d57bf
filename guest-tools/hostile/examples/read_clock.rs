// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        // Tries to learn the time (a timer is the start of a side channel).
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(u128::MAX);
        let start = std::time::Instant::now();
        for i in 0..1_000_000u64 {
            std::hint::black_box(i);
        }
        Ok(format!("wall={wall} elapsed={}", start.elapsed().as_nanos()))
    }
}

hostile::export!(Hostile);
