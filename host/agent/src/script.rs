//! [`ScriptedModel`]: a model that plays back fixed turns, for tests and examples.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use wasmgate_core::{BoxFuture, ToolSpec};

use crate::model::{Message, ModelClient, ModelError, ModelTurn, ToolCall};

/// Plays back its turns in order and records what it was shown. Running out of turns
/// is a [`ModelError`], so a loop that asks once too often fails loudly.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<ModelTurn>>,
    seen: Mutex<Vec<Seen>>,
}

/// What the model was shown for one turn.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The conversation so far.
    pub conversation: Vec<Message>,
    /// The names of the tools on offer.
    pub tools: Vec<String>,
}

impl ScriptedModel {
    /// A model that will produce `turns`, one per request.
    #[must_use]
    pub fn new(turns: impl IntoIterator<Item = ModelTurn>) -> Self {
        Self { turns: Mutex::new(turns.into_iter().collect()), seen: Mutex::default() }
    }

    /// What the model was shown, one entry per turn it produced.
    #[must_use]
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl ModelClient for ScriptedModel {
    fn respond<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let seen = Seen { conversation: conversation.to_vec(), tools: tools.iter().map(|t| t.name.clone()).collect() };
        if let Ok(mut all) = self.seen.lock() {
            all.push(seen);
        }
        let next = self.turns.lock().ok().and_then(|mut t| t.pop_front());
        Box::pin(async move { next.ok_or_else(|| ModelError("the script has no more turns".into())) })
    }
}

impl ModelTurn {
    /// A turn that calls the tools `calls` (name, input), with ids `call-1`, `call-2`, ...
    #[must_use]
    pub fn calls(text: &str, calls: impl IntoIterator<Item = (&'static str, Value)>) -> Self {
        let tool_calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, input))| ToolCall { id: format!("call-{}", i + 1), name: name.into(), input })
            .collect();
        Self { text: text.into(), tool_calls }
    }

    /// A final turn: text and no tool calls.
    #[must_use]
    pub fn answer(text: &str) -> Self {
        Self { text: text.into(), tool_calls: Vec::new() }
    }
}
