// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        let mut big: Vec<u8> = Vec::with_capacity(1 << 30);
        big.resize(1 << 30, 1);
        Ok(format!("allocated {} bytes", std::hint::black_box(&big).len()))
    }
}

hostile::export!(Hostile);
