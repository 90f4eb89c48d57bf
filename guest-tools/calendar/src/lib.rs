//! The sample wasmgate tool component: a small calendar whose events are
//! stored per user in one JSON file under the data directory its policy
//! grants (guest path `/data`).
//!
//! Layout:
//! - [`tools`]: the three tools (`calendar_query`, `calendar_create`,
//!   `calendar_delete`): their definitions and the dispatch of one call;
//! - [`events`]: the calendar document and the rules over it (ownership,
//!   bounds, ids), pure functions;
//! - [`date`]: the strict date and time formats the tools accept;
//! - [`storage`]: the events file, read whole and replaced by
//!   write-temp-then-rename, behind a trait so the logic is tested natively;
//! - `component` (wasm32 only): the `tool-provider` world's export, a thin
//!   shell over [`tools::call`].
//!
//! Every event has an owner. A call names its user in the arguments, and a
//! call only ever sees, and only ever deletes, that user's events. The user
//! comes from the arguments, so it is only as trustworthy as whoever fills
//! them in: a gateway that knows the real user should set it.

pub mod date;
pub mod events;
pub mod storage;
pub mod tools;

#[cfg(target_arch = "wasm32")]
// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "tool-provider", path: "../../wit" });

    use crate::storage::DirStorage;
    use crate::tools::{self, CallFailure};
    use exports::wasmgate::sandbox::tools::{CallError, CallOutcome, Guest, ToolDefinition};

    struct Calendar;

    impl Guest for Calendar {
        fn list_tools() -> Vec<ToolDefinition> {
            tools::definitions()
                .into_iter()
                .map(|def| ToolDefinition {
                    name: def.name.into(),
                    description: def.description.into(),
                    input_schema: def.input_schema.to_string(),
                })
                .collect()
        }

        fn call_tool(name: String, arguments: String) -> Result<CallOutcome, CallError> {
            let mut storage = DirStorage::new(tools::DATA_DIR);
            match tools::call(&name, &arguments, &mut storage) {
                Ok(outcome) => Ok(CallOutcome {
                    content: outcome.content,
                    structured_content: outcome.structured_content,
                    is_error: outcome.is_error,
                }),
                Err(CallFailure::UnknownTool(name)) => Err(CallError::UnknownTool(name)),
                Err(CallFailure::InvalidArguments(why)) => Err(CallError::InvalidArguments(why)),
                Err(CallFailure::Internal(why)) => Err(CallError::Internal(why)),
            }
        }
    }

    export!(Calendar);
}
