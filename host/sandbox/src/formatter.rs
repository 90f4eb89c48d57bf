//! Formatter components: loaded once, then called in a fresh instance per
//! tool result.

use std::path::Path;
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{Engine, PoolConcurrencyLimitError, Store};

use crate::bindings::{FormatError, FormatterPre, ToolResult};
use crate::cache::Cache;
use crate::engine::{Sandbox, deadline_ticks};
use crate::error::{LoadError, SandboxError, bounded};
use crate::limits::Limits;
use crate::state::StoreState;

/// Largest component file accepted, so a misconfigured path to a huge file
/// fails fast instead of being read into memory.
const MAX_COMPONENT_FILE: u64 = 64 << 20;
/// Longest guest-supplied error text kept.
const MAX_ERROR_TEXT: usize = 2048;

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
    engine: Engine,
    pre: FormatterPre<StoreState>,
    limits: Limits,
    /// The epoch tick of the sandbox, to turn deadlines into tick counts.
    tick: Duration,
    fuel_enabled: bool,
    max_memory_bytes: usize,
    slots: u32,
}

impl std::fmt::Debug for Formatter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Formatter").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads a formatter from a `.wasm` file; errors name the file.
    pub fn load_formatter_file(&self, path: &Path, limits: Limits) -> Result<Formatter, LoadError> {
        let read_error = |source| LoadError::Read { path: path.to_owned(), source };
        let size = std::fs::metadata(path).map_err(read_error)?.len();
        if size > MAX_COMPONENT_FILE {
            return Err(LoadError::Invalid {
                name: path.display().to_string(),
                reason: format!("the file is {size} bytes; components over {MAX_COMPONENT_FILE} bytes are refused"),
            });
        }
        let bytes = std::fs::read(path).map_err(read_error)?;
        self.load_formatter(&path.display().to_string(), &bytes, limits)
    }

    /// Loads a formatter from component bytes. `name` identifies it in errors
    /// and logs. `limits` are the default for every call to it.
    ///
    /// Fails if the bytes are not a component, if it imports anything beyond
    /// WASI, if it does not export the `format` interface, if `limits` do not
    /// fit this sandbox, or if it cannot be instantiated within them.
    pub fn load_formatter(&self, name: &str, bytes: &[u8], limits: Limits) -> Result<Formatter, LoadError> {
        check_limits(&limits, self.config.max_memory_bytes, self.config.fuel)
            .map_err(|reason| LoadError::Limits { name: name.to_owned(), reason })?;
        let component = self.compile(name, bytes)?;
        let wrong_world = |e: wasmtime::Error| LoadError::WrongWorld {
            name: name.to_owned(),
            world: "formatter",
            reason: format!("{e:#}"),
        };
        let pre = self.linker.instantiate_pre(&component).map_err(wrong_world)?;
        let pre = FormatterPre::new(pre).map_err(wrong_world)?;
        let formatter = Formatter {
            name: name.to_owned(),
            engine: self.engine.clone(),
            pre,
            tick: self.tick(),
            limits,
            fuel_enabled: self.config.fuel,
            max_memory_bytes: self.config.max_memory_bytes,
            slots: self.config.max_concurrent_calls,
        };
        // Instantiate once now, so a component that can never run within the
        // limits fails at start-up rather than on every call.
        let limits_error = |reason: String| LoadError::Limits { name: name.to_owned(), reason };
        let mut store = formatter.store(&formatter.limits).map_err(|e| limits_error(e.to_string()))?;
        formatter
            .pre
            .instantiate(&mut store)
            .map_err(|e| limits_error(formatter.instantiate_error(e, &store, &formatter.limits).to_string()))?;
        Ok(formatter)
    }

    /// Compiles `bytes`, or loads the compiled form from the cache.
    fn compile(&self, name: &str, bytes: &[u8]) -> Result<Component, LoadError> {
        let cached = self.cache.as_ref().map(|cache| (cache, Cache::key(&self.engine, bytes)));
        if let Some(component) = cached.as_ref().and_then(|(cache, key)| cache.load(&self.engine, key)) {
            return Ok(component);
        }
        let component = Component::new(&self.engine, bytes)
            .map_err(|e| LoadError::Invalid { name: name.to_owned(), reason: format!("{e:#}") })?;
        if let Some((cache, key)) = &cached {
            match component.serialize() {
                Ok(artifact) => cache.store(key, &artifact),
                Err(e) => tracing::warn!(component = name, error = %format!("{e:#}"), "cannot serialize for the cache"),
            }
        }
        Ok(component)
    }
}

impl Formatter {
    /// The name it was loaded under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limits every call gets unless it passes its own.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Renders one result under the formatter's default limits.
    pub fn format(&self, request: FormatRequest) -> Result<String, SandboxError> {
        self.run(request, &self.limits)
    }

    /// Renders one result under `limits` (which must fit the sandbox, as at load).
    pub fn format_with(&self, request: FormatRequest, limits: &Limits) -> Result<String, SandboxError> {
        check_limits(limits, self.max_memory_bytes, self.fuel_enabled).map_err(SandboxError::InvalidLimits)?;
        self.run(request, limits)
    }

    /// A fresh store for one instance, with every limit armed. The deadline
    /// is set before instantiation: start-up code runs under it too.
    fn store(&self, limits: &Limits) -> Result<Store<StoreState>, SandboxError> {
        let mut store = Store::new(&self.engine, StoreState::new(limits));
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(deadline_ticks(limits.deadline, self.tick));
        if self.fuel_enabled {
            store
                .set_fuel(limits.fuel.unwrap_or(u64::MAX))
                .map_err(|e| SandboxError::InvalidLimits(format!("{e:#}")))?;
        }
        Ok(store)
    }

    fn run(&self, request: FormatRequest, limits: &Limits) -> Result<String, SandboxError> {
        let size = request.input_len();
        if size > limits.input_bytes {
            return Err(SandboxError::InputTooLarge { size, limit: limits.input_bytes });
        }
        let mut store = self.store(limits)?;
        let instance = match self.pre.instantiate(&mut store) {
            Ok(instance) => instance,
            Err(e) => return Err(self.instantiate_error(e, &store, limits)),
        };
        let input = ToolResult {
            tool_name: request.tool_name,
            provider: request.provider,
            content: request.content,
            structured_content: request.structured_content,
            is_error: request.is_error,
            max_output_bytes: u32::try_from(limits.output_bytes).unwrap_or(u32::MAX),
        };
        let outcome = instance.wasmgate_sandbox_format().call_format(&mut store, &input);
        let stderr = store.data().stderr.contents();
        if !stderr.is_empty() {
            tracing::debug!(target: "wasmgate::guest", formatter = %self.name, stderr = %bounded(&stderr, 4096), "guest stderr");
        }
        match outcome {
            Ok(Ok(text)) if text.len() > limits.output_bytes => {
                Err(SandboxError::OutputTooLarge { size: text.len(), limit: limits.output_bytes })
            }
            Ok(Ok(text)) => Ok(text),
            Ok(Err(declined)) => Err(SandboxError::Format(bounded_format_error(declined))),
            Err(e) => Err(SandboxError::from_call(e, store.data().limiter.hits, limits, stderr)),
        }
    }

    fn instantiate_error(&self, err: wasmtime::Error, store: &Store<StoreState>, limits: &Limits) -> SandboxError {
        if err.downcast_ref::<PoolConcurrencyLimitError>().is_some() {
            return SandboxError::Busy { slots: self.slots };
        }
        let hits = store.data().limiter.hits;
        if hits.memory || hits.table || err.downcast_ref::<wasmtime::Trap>().is_some() {
            return SandboxError::from_call(err, hits, limits, store.data().stderr.contents());
        }
        SandboxError::Instantiate(format!("{err:#}"))
    }
}

/// Limits a sandbox can honour: memory within its pool slots, fuel only if
/// it meters fuel.
fn check_limits(limits: &Limits, max_memory_bytes: usize, fuel_enabled: bool) -> Result<(), String> {
    if limits.memory_bytes > max_memory_bytes {
        return Err(format!(
            "memory limit {} exceeds the sandbox maximum {max_memory_bytes} (raise SandboxConfig::max_memory_bytes)",
            limits.memory_bytes
        ));
    }
    if limits.fuel.is_some() && !fuel_enabled {
        return Err("a fuel limit needs a sandbox built with SandboxConfig::fuel = true".into());
    }
    Ok(())
}

fn bounded_format_error(error: FormatError) -> FormatError {
    match error {
        FormatError::InvalidInput(why) => FormatError::InvalidInput(bounded(&why, MAX_ERROR_TEXT)),
        FormatError::Unsupported(why) => FormatError::Unsupported(bounded(&why, MAX_ERROR_TEXT)),
        FormatError::Internal(why) => FormatError::Internal(bounded(&why, MAX_ERROR_TEXT)),
    }
}
