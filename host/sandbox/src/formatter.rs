//! Formatter components: loaded once, then called in a fresh instance per
//! tool result.

use std::path::Path;
use std::sync::Arc;

use wasmtime::component::Component;

use crate::bindings::{FormatError, FormatterAsync, FormatterPre, FormatterPreAsync, ToolResult};
use crate::engine::Sandbox;
use crate::error::{LoadError, SandboxError};
use crate::limits::CallLimits;
use crate::prepared::{Ready, Spare};
use crate::runner::{LazyPre, Loaded, Runner, guest_stderr, read_component, run_blocking, wrong_world};
use crate::state::{Mode, StoreState};

/// Longest guest-supplied error text kept, in characters of its log-safe form
/// (`text_safety::escape_for_log_cut`: one line, escapes shown, the cut marked), so a
/// hostile guest can neither flood the logs nor rewrite a screen nor disguise a line.
pub(crate) const MAX_ERROR_CHARS: usize = 2048;

/// The world a formatter is for.
const WORLD: &str = "formatter";

/// One tool result to render, as the provider sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatRequest {
    /// The tool's name as the agent sees it.
    pub tool_name: String,
    /// The provider that ran it.
    pub provider: String,
    /// The result's `content` array, as JSON text.
    pub content: String,
    /// The result's `structuredContent`, as JSON text.
    pub structured_content: Option<String>,
    /// The result's `isError` flag.
    pub is_error: bool,
}

impl FormatRequest {
    fn input_len(&self) -> usize {
        self.tool_name.len()
            + self.provider.len()
            + self.content.len()
            + self.structured_content.as_ref().map_or(0, String::len)
    }
}

/// A loaded formatter component. Cheap to share across threads: every call
/// gets its own store and instance, so nothing one call does is visible to
/// the next.
#[derive(Clone)]
pub struct Formatter {
    name: String,
    runner: Runner,
    pre: FormatterPre<StoreState>,
    /// The same component linked to async WASI, for [`Formatter::format_async`].
    pre_async: Arc<LazyPre<FormatterPreAsync<StoreState>>>,
    /// The instance of the next async call, made ahead under `limits`.
    spare: Arc<Spare<(), FormatterAsync>>,
    limits: CallLimits,
}

impl std::fmt::Debug for Formatter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Formatter").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads a formatter from a `.wasm` file; errors name the file.
    pub fn load_formatter_file(&self, path: &Path, limits: CallLimits) -> Result<Formatter, LoadError> {
        let bytes = read_component(path)?;
        self.load_formatter(&path.display().to_string(), &bytes, limits)
    }

    /// Loads a formatter from component bytes. `name` identifies it in errors
    /// and logs. `limits` are the default for every call to it.
    ///
    /// Fails if the bytes are not a component, if it imports anything beyond
    /// WASI, if it does not export the `format` interface, if `limits` do not
    /// fit this sandbox, or if it cannot be instantiated within them.
    pub fn load_formatter(&self, name: &str, bytes: &[u8], limits: CallLimits) -> Result<Formatter, LoadError> {
        let typed = |component: &Component, pre| {
            let pre = FormatterPre::new(pre).map_err(|e| wrong_world(name, WORLD, e.into_boxed_dyn_error()))?;
            Ok((pre, LazyPre::new(component.clone(), Arc::clone(&self.linker_async))))
        };
        let Loaded { runner, typed: (pre, pre_async) } = self.load_component(name, WORLD, bytes, &limits, typed)?;
        Ok(Formatter { name: name.to_owned(), runner, pre, pre_async, spare: Arc::default(), limits })
    }
}

impl Formatter {
    /// The same component with other default limits, without loading it again: the
    /// limits are checked and the trial instantiation repeated, as at load.
    ///
    /// # Errors
    ///
    /// [`LoadError::Limits`] when the component cannot run within `limits`.
    pub fn with_limits(&self, limits: CallLimits) -> Result<Formatter, LoadError> {
        self.runner.admit(&self.name, &limits, self.pre.instance_pre())?;
        Ok(Formatter { limits, spare: Arc::default(), ..self.clone() })
    }

    /// Whether the instance of the next async call is ready.
    #[cfg(test)]
    pub(crate) fn has_prepared_instance(&self) -> bool {
        self.spare.is_ready()
    }

    /// The name it was loaded under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limits every call gets unless it passes its own.
    pub fn limits(&self) -> &CallLimits {
        &self.limits
    }

    /// Renders one result under the formatter's default limits.
    pub fn format(&self, request: FormatRequest) -> Result<String, SandboxError> {
        self.run(request, &self.limits)
    }

    /// Renders one result under `limits` (which must fit the sandbox, as at load).
    pub fn format_with(&self, request: FormatRequest, limits: &CallLimits) -> Result<String, SandboxError> {
        self.runner.check(limits)?;
        self.run(request, limits)
    }

    /// Renders one result under the formatter's default limits, on the calling async
    /// task rather than a thread of its own: the guest runs on a fiber that yields at
    /// every epoch tick, so it never holds the task's thread for longer than a tick,
    /// and the deadline, memory, output and every other limit hold as in
    /// [`Formatter::format`]. Needs a tokio runtime (WASI's streams are async here).
    pub async fn format_async(&self, request: FormatRequest) -> Result<String, SandboxError> {
        let limits = &self.limits;
        let input = self.input(request, limits)?;
        let (mut store, instance) = match self.spare.take(|()| true) {
            Some((mut store, instance)) => {
                Runner::restart_deadline(&mut store, limits);
                (store, instance)
            }
            None => instantiate_async(&self.runner, &self.pre_async, limits).await?,
        };
        let input = input.into();
        let outcome = instance.wasmgate_sandbox_format().call_format(&mut store, &input).await;
        let outcome = self.outcome(outcome.map(|r| r.map_err(FormatError::from)), &store, limits);
        // The next instance first: with the reserve nearly spent, it is worth more than a
        // teardown after the answer (a store the reserve cannot take is torn down here).
        self.prepare_next();
        self.runner.retire(store);
        outcome
    }

    /// Makes the instance of the next [`Formatter::format_async`] once the runtime has
    /// run what is ready now (see the `prepared` module).
    fn prepare_next(&self) {
        self.spare.refill(self.runner.reserve(), || {
            let (runner, pre, limits) = (self.runner.clone(), Arc::clone(&self.pre_async), self.limits.clone());
            ((), async move { instantiate_async(&runner, &pre, &limits).await.ok() })
        });
    }

    fn run(&self, request: FormatRequest, limits: &CallLimits) -> Result<String, SandboxError> {
        let input = self.input(request, limits)?;
        let run = || {
            let mut store = self.runner.store(StoreState::new(limits, Mode::Blocking), limits)?;
            let instance = match self.pre.instantiate(&mut store) {
                Ok(instance) => instance,
                Err(e) => return Err(self.runner.instantiate_error(e, &store, limits)),
            };
            let outcome = instance.wasmgate_sandbox_format().call_format(&mut store, &input);
            self.outcome(outcome, &store, limits)
        };
        run_blocking("run the call", run)
    }

    /// The guest's input, once the request is known to fit `limits`.
    fn input(&self, request: FormatRequest, limits: &CallLimits) -> Result<ToolResult, SandboxError> {
        let size = request.input_len();
        if size > limits.input_bytes {
            return Err(SandboxError::InputTooLarge { size, limit: limits.input_bytes });
        }
        Ok(ToolResult {
            tool_name: request.tool_name,
            provider: request.provider,
            content: request.content,
            structured_content: request.structured_content,
            is_error: request.is_error,
            max_output_bytes: u32::try_from(limits.output_bytes).unwrap_or(u32::MAX),
        })
    }

    /// What the call came to: the text within the output cap, or why not.
    fn outcome(
        &self,
        outcome: wasmtime::Result<Result<String, FormatError>>,
        store: &wasmtime::Store<StoreState>,
        limits: &CallLimits,
    ) -> Result<String, SandboxError> {
        let stderr = guest_stderr(store, &self.name);
        match outcome {
            Ok(Ok(text)) if text.len() > limits.output_bytes => {
                Err(SandboxError::OutputTooLarge { size: text.len(), limit: limits.output_bytes }.counted())
            }
            Ok(Ok(text)) => Ok(text),
            Ok(Err(declined)) => Err(SandboxError::Format(bounded_format_error(declined))),
            Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr)),
        }
    }
}

/// A new instance of the formatter on async WASI, in a store with every limit armed.
async fn instantiate_async(
    runner: &Runner,
    pre: &LazyPre<FormatterPreAsync<StoreState>>,
    limits: &CallLimits,
) -> Result<Ready<FormatterAsync>, SandboxError> {
    let mut store = runner.store_async(StoreState::new(limits, Mode::Async), limits)?;
    match pre.get(FormatterPreAsync::new)?.instantiate_async(&mut store).await {
        Ok(instance) => Ok((store, instance)),
        Err(e) => Err(runner.instantiate_error(e, &store, limits)),
    }
}

fn bounded_format_error(error: FormatError) -> FormatError {
    match error {
        FormatError::InvalidInput(why) => {
            FormatError::InvalidInput(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS))
        }
        FormatError::Unsupported(why) => {
            FormatError::Unsupported(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS))
        }
        FormatError::Internal(why) => FormatError::Internal(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS)),
    }
}
