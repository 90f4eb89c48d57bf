use hostile::{FormatError, Guest, ToolResult};

struct Hostile;

impl Guest for Hostile {
    fn format(_result: ToolResult) -> Result<String, FormatError> {
        panic!("hostile formatter panicked on purpose")
    }
}

hostile::export!(Hostile);
