// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        // An absolute path and one relative to whatever the working directory is.
        let mut denials = Vec::new();
        for path in ["/tmp/wasmgate-escaped.txt", "wasmgate-escaped.txt"] {
            match std::fs::write(path, "escaped") {
                Ok(()) => return Ok(format!("wrote {path}")),
                Err(e) => denials.push(format!("{path}: {e}")),
            }
        }
        Err(hostile::denied("write file", denials.join("; ")))
    }
}

hostile::export!(Hostile);
