//! Choosing the formatter for a result: configured rules map provider and tool name
//! patterns to formatter components; the first matching rule wins, and the default
//! (the built-in json-text formatter) takes the rest.

use std::path::PathBuf;
use std::sync::Arc;

use wasmgate_core::Naming;
use wasmgate_policy::Glob;
use wasmgate_sandbox::{CallLimits, Formatter, Sandbox};

use crate::error::AdapterError;
use crate::media::MediaPass;

/// One configured rule: results of tools matching `tool` from providers matching
/// `provider` (`*` matches any run of characters) go through the component at `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatterRule {
    /// Provider name pattern.
    pub provider: String,
    /// Tool name pattern (the provider's own tool name, without the prefix).
    pub tool: String,
    /// The formatter component.
    pub path: PathBuf,
}

/// How one provider's tools are presented: the loaded formatters and the rules that
/// select them, and the names its tools and prompts are shown under.
#[derive(Debug, Clone)]
pub struct Formatters {
    default: Arc<Formatter>,
    rules: Vec<(FormatterRule, Arc<Formatter>)>,
    naming: Naming,
    media: Option<Arc<MediaPass>>,
}

impl Formatters {
    /// Only the default formatter.
    #[must_use]
    pub fn new(default: Formatter) -> Self {
        Self { default: Arc::new(default), rules: Vec::new(), naming: Naming::default(), media: None }
    }

    /// Loads every rule's component with `limits` as its per-call limits. A file that is
    /// not a formatter component fails here, at start-up, naming the file.
    ///
    /// # Errors
    ///
    /// [`AdapterError::Formatter`] for the first file that cannot be loaded.
    pub fn load(
        sandbox: &Sandbox,
        default: Formatter,
        rules: impl IntoIterator<Item = FormatterRule>,
        limits: &CallLimits,
    ) -> Result<Self, AdapterError> {
        let mut loaded: Vec<(FormatterRule, Arc<Formatter>)> = Vec::new();
        for rule in rules {
            let same_file = loaded.iter().find(|(r, _)| r.path == rule.path).map(|(_, f)| Arc::clone(f));
            let formatter = match same_file {
                Some(formatter) => formatter,
                None => Arc::new(
                    sandbox
                        .load_formatter_file(&rule.path, limits.clone())
                        .map_err(|source| AdapterError::Formatter { path: rule.path.clone(), source })?,
                ),
            };
            loaded.push((rule, formatter));
        }
        Ok(Self { default: Arc::new(default), rules: loaded, naming: Naming::default(), media: None })
    }

    /// The same, showing the provider's names under `naming`.
    #[must_use]
    pub fn with_naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// The same, passing media to clients through `media`.
    #[must_use]
    pub fn with_media(mut self, media: MediaPass) -> Self {
        self.media = Some(Arc::new(media));
        self
    }

    /// How media pass to clients, if they do.
    #[must_use]
    pub fn media(&self) -> Option<Arc<MediaPass>> {
        self.media.clone()
    }

    /// The names the provider's tools and prompts are shown under.
    #[must_use]
    pub fn naming(&self) -> Naming {
        self.naming
    }

    /// The formatter for results of `tool` from `provider`.
    #[must_use]
    pub fn select(&self, provider: &str, tool: &str) -> Arc<Formatter> {
        self.rules
            .iter()
            .find(|(rule, _)| Glob::new(&rule.provider).matches(provider) && Glob::new(&rule.tool).matches(tool))
            .map_or_else(|| Arc::clone(&self.default), |(_, f)| Arc::clone(f))
    }
}
