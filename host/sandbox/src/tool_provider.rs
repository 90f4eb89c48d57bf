//! Tool-provider components: loaded once, then listed and called in a fresh
//! instance per call, with only the grants the caller passes.

use std::path::Path;
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::Component;

use crate::bindings::{CallError, ToolProviderAsync, ToolProviderPre, ToolProviderPreAsync};
use crate::engine::Sandbox;
use crate::error::{LoadError, SandboxError, ToolCallError};
use crate::formatter::MAX_ERROR_CHARS;
use crate::grants::Grants;
use crate::limits::CallLimits;
use crate::prepared::{Ready, Spare};
use crate::runner::{LazyPre, Loaded, Runner, guest_stderr, read_component, run_blocking, wrong_world};
use crate::state::{Mode, StoreState};
use crate::tool_output::{CallOutcome, ToolDefinition, check_definitions, check_outcome};

/// The world a tool provider is for.
const WORLD: &str = "tool-provider";

/// A loaded tool-provider component. Cheap to share across threads: every
/// call gets its own store, instance and WASI context, so nothing one call
/// does (memory, statics, open files) is visible to the next.
#[derive(Clone)]
pub struct ToolProvider {
    name: String,
    runner: Runner,
    pre: ToolProviderPre<StoreState>,
    /// The same component linked to async WASI, for [`ToolProvider::call_async`].
    pre_async: Arc<LazyPre<ToolProviderPreAsync<StoreState>>>,
    /// The instance of the next async call, made ahead for the grants and limits of the
    /// last one.
    spare: Arc<Spare<(Grants, CallLimits), ToolProviderAsync>>,
    limits: CallLimits,
}

impl std::fmt::Debug for ToolProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolProvider").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads a tool provider from a `.wasm` file. `name` identifies it in
    /// logs; errors name both it and the file.
    pub fn load_tool_provider_file(
        &self,
        name: &str,
        path: &Path,
        limits: CallLimits,
    ) -> Result<ToolProvider, LoadError> {
        let bytes = read_component(path)?;
        self.load_provider(name, &format!("{name} ({})", path.display()), &bytes, limits)
    }

    /// Loads a tool provider from component bytes. `name` identifies it in
    /// errors and logs; `limits` are the default for listing its tools.
    ///
    /// Fails if the bytes are not a component, if it imports anything beyond
    /// WASI, if it does not export the `tools` interface, if `limits` do not
    /// fit this sandbox, or if it cannot be instantiated within them (tried
    /// once, with nothing granted).
    pub fn load_tool_provider(&self, name: &str, bytes: &[u8], limits: CallLimits) -> Result<ToolProvider, LoadError> {
        self.load_provider(name, name, bytes, limits)
    }

    fn load_provider(
        &self,
        name: &str,
        label: &str,
        bytes: &[u8],
        limits: CallLimits,
    ) -> Result<ToolProvider, LoadError> {
        let typed = |component: &Component, pre| {
            let pre = ToolProviderPre::new(pre).map_err(|e| wrong_world(label, WORLD, e.into_boxed_dyn_error()))?;
            Ok((pre, LazyPre::new(component.clone(), Arc::clone(&self.linker_async))))
        };
        let Loaded { runner, typed: (pre, pre_async) } = self.load_component(label, WORLD, bytes, &limits, typed)?;
        Ok(ToolProvider { name: name.to_owned(), runner, pre, pre_async, spare: Arc::default(), limits })
    }
}

impl ToolProvider {
    /// Whether the instance of the next async call is ready.
    #[cfg(test)]
    pub(crate) fn has_prepared_instance(&self) -> bool {
        self.spare.is_ready()
    }

    /// The name it was loaded under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limits it was loaded with: those of [`ToolProvider::list_tools`],
    /// and a sensible default for calls.
    pub fn limits(&self) -> &CallLimits {
        &self.limits
    }

    /// Every tool the component offers, checked (see [`ToolDefinition`]).
    /// Runs in a fresh instance under the default limits, with nothing
    /// granted: listing needs no data.
    pub fn list_tools(&self) -> Result<Vec<ToolDefinition>, SandboxError> {
        let limits = &self.limits;
        let list = || {
            let (mut store, instance) = self.instantiate(StoreState::new(limits, Mode::Blocking), limits)?;
            let listed = instance.wasmgate_sandbox_tools().call_list_tools(&mut store);
            let stderr = guest_stderr(&store, &self.name);
            match listed {
                Ok(list) => check_definitions(list, limits.output_bytes),
                Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr)),
            }
        };
        run_blocking("list the tools", list)
    }

    /// Calls the tool `name` with `arguments_json` (a JSON object) in a fresh
    /// instance that gets exactly `grants`, under `limits`.
    ///
    /// `Err(ToolCallError::Call(..))` is the component declining with its own
    /// typed error; `Err(ToolCallError::Sandbox(..))` is a limit, a trap, a
    /// grant that cannot be given, or output that breaks the contract. A
    /// tool's own failure that the model should read is `Ok` with `is_error`.
    pub fn call(
        &self,
        name: &str,
        arguments_json: &str,
        grants: &Grants,
        limits: &CallLimits,
    ) -> Result<CallOutcome, ToolCallError> {
        self.check_call(arguments_json.len() + name.len(), arguments_json, limits)?;
        let call = || {
            let state = StoreState::with_grants(limits, grants, Mode::Blocking)?;
            let (mut store, instance) = self.instantiate(state, limits)?;
            let called = instance.wasmgate_sandbox_tools().call_call_tool(&mut store, name, arguments_json);
            self.called(called, &store, limits)
        };
        run_blocking("run the call", call)
    }

    /// [`ToolProvider::call`] on the calling async task rather than a thread of its
    /// own: the guest runs on a fiber that yields at every epoch tick, so a tool that
    /// spins holds the task's thread for at most a tick at a time until its deadline
    /// interrupts it, and its file operations run on the runtime's blocking pool.
    /// Every limit holds as in the blocking call. Needs a tokio runtime. Dropping
    /// the future stops the call.
    pub async fn call_async(
        &self,
        name: &str,
        arguments_json: &str,
        grants: &Grants,
        limits: &CallLimits,
    ) -> Result<CallOutcome, ToolCallError> {
        self.check_call(arguments_json.len() + name.len(), arguments_json, limits)?;
        // A call granted directories is never made ahead (see `prepare_next`): it leaves
        // the instance of other calls where it is.
        let spare = if grants.dirs.is_empty() { self.spare.take(|(g, l)| g == grants && l == limits) } else { None };
        let (mut store, instance) = match spare {
            Some((mut store, instance)) => {
                Runner::restart_deadline(&mut store, limits);
                (store, instance)
            }
            None => instantiate_async(&self.runner, &self.pre_async, grants, limits).await?,
        };
        let called = instance.wasmgate_sandbox_tools().call_call_tool(&mut store, name, arguments_json).await;
        let called = called.map(|r| r.map(crate::bindings::CallOutcome::from).map_err(CallError::from));
        let outcome = self.called(called, &store, limits);
        // The next instance first, as in `Formatter::format_async`.
        self.prepare_next(grants, limits);
        self.runner.retire(store);
        outcome
    }

    /// Makes the instance of the next [`ToolProvider::call_async`] with the same grants
    /// and limits, once the runtime has run what is ready now (see the `prepared`
    /// module). Not for a call granted directories: those are opened for each call when
    /// it starts, so a call sees the directory as it is then, and one that may write
    /// runs only after the previous call has ended.
    fn prepare_next(&self, grants: &Grants, limits: &CallLimits) {
        if !grants.dirs.is_empty() {
            return;
        }
        self.spare.refill(self.runner.reserve(), || {
            let (runner, pre) = (self.runner.clone(), Arc::clone(&self.pre_async));
            let key = (grants.clone(), limits.clone());
            let (grants, limits) = key.clone();
            (key, async move { instantiate_async(&runner, &pre, &grants, &limits).await.ok() })
        });
    }

    /// What is checked before any guest code runs: the limits, the input size, and
    /// that the arguments are a JSON object.
    fn check_call(&self, size: usize, arguments_json: &str, limits: &CallLimits) -> Result<(), ToolCallError> {
        self.runner.check(limits).map_err(SandboxError::from)?;
        if size > limits.input_bytes {
            return Err(SandboxError::InputTooLarge { size, limit: limits.input_bytes }.into());
        }
        check_arguments(arguments_json).map_err(|why| ToolCallError::Call(CallError::InvalidArguments(why)))
    }

    /// What a call came to: its checked outcome, the component's own refusal, or
    /// why the sandbox stopped it.
    fn called(
        &self,
        called: wasmtime::Result<Result<crate::bindings::CallOutcome, CallError>>,
        store: &Store<StoreState>,
        limits: &CallLimits,
    ) -> Result<CallOutcome, ToolCallError> {
        let stderr = guest_stderr(store, &self.name);
        match called {
            Ok(Ok(outcome)) => Ok(check_outcome(outcome, limits.output_bytes)?),
            Ok(Err(declined)) => Err(ToolCallError::Call(bounded_call_error(declined))),
            Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr).into()),
        }
    }

    fn instantiate(
        &self,
        state: StoreState,
        limits: &CallLimits,
    ) -> Result<(Store<StoreState>, crate::bindings::ToolProvider), SandboxError> {
        let mut store = self.runner.store(state, limits)?;
        match self.pre.instantiate(&mut store) {
            Ok(instance) => Ok((store, instance)),
            Err(e) => Err(self.runner.instantiate_error(e, &store, limits)),
        }
    }
}

/// A new instance of the tool provider on async WASI, given `grants`, in a store with
/// every limit armed.
async fn instantiate_async(
    runner: &Runner,
    pre: &LazyPre<ToolProviderPreAsync<StoreState>>,
    grants: &Grants,
    limits: &CallLimits,
) -> Result<Ready<ToolProviderAsync>, SandboxError> {
    let mut store = runner.store_async(StoreState::with_grants(limits, grants, Mode::Async)?, limits)?;
    match pre.get(ToolProviderPreAsync::new)?.instantiate_async(&mut store).await {
        Ok(instance) => Ok((store, instance)),
        Err(e) => Err(runner.instantiate_error(e, &store, limits)),
    }
}

/// The arguments must be a JSON object; checked before any guest code runs.
fn check_arguments(arguments_json: &str) -> Result<(), String> {
    match serde_json::from_str::<serde_json::Value>(arguments_json) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("the arguments are not a JSON object".into()),
        Err(e) => Err(format!("the arguments are not JSON: {e}")),
    }
}

fn bounded_call_error(error: CallError) -> CallError {
    match error {
        CallError::UnknownTool(name) => CallError::UnknownTool(text_safety::escape_for_log_cut(&name, MAX_ERROR_CHARS)),
        CallError::InvalidArguments(why) => {
            CallError::InvalidArguments(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS))
        }
        CallError::Internal(why) => CallError::Internal(text_safety::escape_for_log_cut(&why, MAX_ERROR_CHARS)),
    }
}
