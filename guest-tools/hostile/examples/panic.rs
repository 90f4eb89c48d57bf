// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        panic!("hostile formatter panicked on purpose")
    }
}

hostile::export!(Hostile);
