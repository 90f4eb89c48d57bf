//! Screen components (WIT world `screen`): a user's own detector, loaded once, then
//! called in a fresh instance for every text it looks at, under the same limits as a
//! formatter.
//!
//! What a screen answers is untrusted too: at most [`MAX_FINDINGS`] findings are kept,
//! a rule that is not `[a-z0-9-]{1,64}` becomes `screen-finding`, and a description is
//! cleaned (escape, control and invisible characters removed) and cut to
//! [`MAX_DESCRIPTION_CHARS`].

use std::path::Path;
use std::sync::Arc;

use wasmtime::component::Component;

use crate::bindings::{GuestFinding, ProviderText, ScreenError, ScreenPreAsync};
use crate::engine::Sandbox;
use crate::error::{LoadError, SandboxError};
use crate::formatter::MAX_ERROR_CHARS;
use crate::limits::CallLimits;
use crate::runner::{LazyPre, Loaded, Runner, guest_stderr, read_component, wrong_world};
use crate::state::{Mode, StoreState};

/// The world it is for.
const WORLD: &str = "screen";

/// The most findings kept from one call.
pub const MAX_FINDINGS: usize = 16;
/// The longest description kept, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 256;

/// One text to look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScreenRequest {
    /// The provider that sent it.
    pub provider: String,
    /// The tool whose result it is, or what else it is.
    pub subject: String,
    /// The text.
    pub text: String,
}

/// One thing a screen found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// A stable identifier, `[a-z0-9-]{1,64}`.
    pub rule: String,
    /// A fixed sentence, cleaned and bounded.
    pub description: String,
}

/// A loaded screen component. Every call gets its own store and instance.
#[derive(Clone)]
pub struct Screen {
    name: String,
    runner: Runner,
    pre: Arc<LazyPre<ScreenPreAsync<StoreState>>>,
    limits: CallLimits,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads a screen from a `.wasm` file; errors name the file.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load_screen`], or the file cannot be read.
    pub fn load_screen_file(&self, path: &Path, limits: CallLimits) -> Result<Screen, LoadError> {
        let bytes = read_component(path)?;
        self.load_screen(&path.display().to_string(), &bytes, limits)
    }

    /// Loads a screen from component bytes, under `limits` for every call.
    ///
    /// # Errors
    ///
    /// The bytes are not a component, it imports more than WASI, it does not export
    /// the `screening` interface, `limits` do not fit this sandbox, or it cannot be
    /// instantiated within them (tried once, with nothing granted).
    pub fn load_screen(&self, name: &str, bytes: &[u8], limits: CallLimits) -> Result<Screen, LoadError> {
        let typed = |component: &Component, _| {
            let pre = LazyPre::new(component.clone(), Arc::clone(&self.linker_async));
            pre.get(ScreenPreAsync::new).map_err(|e| wrong_world(name, WORLD, Box::new(e)))?;
            Ok(pre)
        };
        let Loaded { runner, typed: pre } = self.load_component(name, WORLD, bytes, &limits, typed)?;
        Ok(Screen { name: name.to_owned(), runner, pre, limits })
    }
}

impl Screen {
    /// The name it was loaded under.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Looks at one text, on the calling async task (the guest on a fiber that yields
    /// at every epoch tick), under the screen's limits.
    ///
    /// # Errors
    ///
    /// Every limit of a formatter call ([`SandboxError`]), or the screen declining.
    pub async fn screen(&self, request: ScreenRequest) -> Result<Vec<Finding>, SandboxError> {
        let limits = &self.limits;
        let size = request.provider.len() + request.subject.len() + request.text.len();
        if size > limits.input_bytes {
            return Err(SandboxError::InputTooLarge { size, limit: limits.input_bytes });
        }
        let mut store = self.runner.store_async(StoreState::new(limits, Mode::Async), limits)?;
        let pre = self.pre.get(ScreenPreAsync::new)?;
        let instance = match pre.instantiate_async(&mut store).await {
            Ok(instance) => instance,
            Err(e) => return Err(self.runner.instantiate_error(e, &store, limits)),
        };
        let input = ProviderText { provider: request.provider, subject: request.subject, text: request.text };
        let outcome = instance.wasmgate_sandbox_screening().call_screen(&mut store, &input).await;
        let stderr = guest_stderr(&store, &self.name);
        let outcome = match outcome {
            Ok(Ok(findings)) => Ok(findings.into_iter().take(MAX_FINDINGS).map(finding).collect()),
            Ok(Err(ScreenError::Unsupported(why) | ScreenError::Internal(why))) => {
                Err(SandboxError::Screen(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS)))
            }
            Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr)),
        };
        self.runner.retire(store);
        outcome
    }
}

/// A guest's finding, made safe to log and to show.
fn finding(found: GuestFinding) -> Finding {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let rule = if (1..=64).contains(&found.rule.len()) && found.rule.chars().all(plain) {
        found.rule
    } else {
        "screen-finding".to_owned()
    };
    let description = text_safety::truncated(&text_safety::clean(&found.description), MAX_DESCRIPTION_CHARS);
    Finding { rule, description }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guests_finding_is_made_safe() {
        let odd = finding(GuestFinding { rule: "Evil Rule\u{1b}[2J".into(), description: "x\u{202e}y".repeat(200) });
        assert_eq!(odd.rule, "screen-finding");
        assert_eq!(odd.description.chars().count(), MAX_DESCRIPTION_CHARS + text_safety::CUT_MARK.chars().count());
        assert!(!odd.description.contains('\u{202e}'));
        let fine = finding(GuestFinding { rule: "secret-path".into(), description: "names a key file".into() });
        assert_eq!((fine.rule.as_str(), fine.description.as_str()), ("secret-path", "names a key file"));
    }
}
