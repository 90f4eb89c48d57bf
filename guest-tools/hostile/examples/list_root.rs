// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        let entries = std::fs::read_dir("/").map_err(|e| hostile::denied("list /", e))?;
        Ok(entries.filter_map(Result::ok).map(|e| e.path().display().to_string()).collect::<Vec<_>>().join("\n"))
    }
}

hostile::export!(Hostile);
