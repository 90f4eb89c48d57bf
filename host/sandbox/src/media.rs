//! The media check (WIT world `media-check`): which image, audio and embedded binary
//! blocks of a result may reach a client as they are. Loaded once, then called in a
//! fresh instance for every result that has such blocks, under the same limits as a
//! formatter.
//!
//! What it answers is untrusted too: a second verdict for the same index is ignored,
//! and a refusal is cleaned and cut to [`MAX_REFUSAL_CHARS`]. The caller passes only
//! the blocks it looked up itself, by index, so a verdict on an index that is not a
//! binary block of the result passes nothing.

use std::sync::Arc;

use wasmtime::component::{Component, InstancePre};

use crate::bindings::{MediaCheckPreAsync, MediaRequest as GuestRequest};
use crate::engine::Sandbox;
use crate::error::{LoadError, SandboxError};
use crate::formatter::MAX_ERROR_CHARS;
use crate::limits::CallLimits;
use crate::runner::{LazyPre, Loaded, Runner, guest_stderr, wrong_world};
use crate::state::{Mode, StoreState};

/// The world it is for.
const WORLD: &str = "media-check";

/// The longest refusal kept, in characters.
pub const MAX_REFUSAL_CHARS: usize = 160;

/// One result's content and what may pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MediaCheckRequest {
    /// The `content` array, as JSON text.
    pub content: String,
    /// The MIME types that may pass, lower case.
    pub allowed_types: Vec<String>,
    /// The most bytes one block may hold once decoded.
    pub max_bytes: u32,
}

/// The verdict on one binary block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaVerdict {
    /// The block's index in `content`.
    pub index: usize,
    /// `None` when it may pass; otherwise why not (cleaned and bounded).
    pub refusal: Option<String>,
}

/// A loaded media check. Every call gets its own store and instance.
#[derive(Clone)]
pub struct MediaCheck {
    runner: Runner,
    pre: Arc<LazyPre<MediaCheckPreAsync<StoreState>>>,
    /// Linked to blocking WASI, for the trial instantiation of other limits.
    trial: InstancePre<StoreState>,
    limits: CallLimits,
}

impl std::fmt::Debug for MediaCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaCheck").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads a media check from component bytes, under `limits` for every call.
    ///
    /// # Errors
    ///
    /// The bytes are not a component, it imports more than WASI, it does not export
    /// the `media` interface, `limits` do not fit this sandbox, or it cannot be
    /// instantiated within them (tried once, with nothing granted).
    pub fn load_media_check(&self, bytes: &[u8], limits: CallLimits) -> Result<MediaCheck, LoadError> {
        let typed = |component: &Component, trial| {
            let pre = LazyPre::new(component.clone(), Arc::clone(&self.linker_async));
            pre.get(MediaCheckPreAsync::new).map_err(|e| wrong_world(WORLD, WORLD, Box::new(e)))?;
            Ok((pre, trial))
        };
        let Loaded { runner, typed: (pre, trial) } = self.load_component(WORLD, WORLD, bytes, &limits, typed)?;
        Ok(MediaCheck { runner, pre, trial, limits })
    }
}

impl MediaCheck {
    /// The same check under other limits, without loading it again: the limits are
    /// checked and the trial instantiation repeated, as at load.
    ///
    /// # Errors
    ///
    /// [`LoadError::Limits`] when the component cannot run within `limits`.
    pub fn with_limits(&self, limits: CallLimits) -> Result<Self, LoadError> {
        self.runner.admit(WORLD, &limits, &self.trial)?;
        Ok(Self { limits, ..self.clone() })
    }

    /// Checks one result's binary blocks, on the calling async task, under the limits.
    ///
    /// # Errors
    ///
    /// Every limit of a formatter call ([`SandboxError`]), or the check declining.
    pub async fn check(&self, request: MediaCheckRequest) -> Result<Vec<MediaVerdict>, SandboxError> {
        let limits = &self.limits;
        let size = request.content.len() + request.allowed_types.iter().map(String::len).sum::<usize>();
        if size > limits.input_bytes {
            return Err(SandboxError::InputTooLarge { size, limit: limits.input_bytes });
        }
        let mut store = self.runner.store_async(StoreState::new(limits, Mode::Async), limits)?;
        let pre = self.pre.get(MediaCheckPreAsync::new)?;
        let instance = match pre.instantiate_async(&mut store).await {
            Ok(instance) => instance,
            Err(e) => return Err(self.runner.instantiate_error(e, &store, limits)),
        };
        let input = GuestRequest {
            content: request.content,
            allowed_types: request.allowed_types,
            max_bytes: request.max_bytes,
        };
        let outcome = instance.wasmgate_sandbox_media().call_check(&mut store, &input).await;
        let stderr = guest_stderr(&store, "media-check");
        let outcome = match outcome {
            Ok(Ok(verdicts)) => {
                let mut kept: Vec<MediaVerdict> = Vec::new();
                for verdict in verdicts {
                    let index = verdict.index as usize;
                    if !kept.iter().any(|k| k.index == index) {
                        let refusal = verdict
                            .refusal
                            .map(|why| text_safety::truncated(&text_safety::clean(&why), MAX_REFUSAL_CHARS));
                        kept.push(MediaVerdict { index, refusal });
                    }
                }
                Ok(kept)
            }
            Ok(Err(why)) => Err(SandboxError::Media(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS))),
            Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr)),
        };
        self.runner.retire(store);
        outcome
    }
}
