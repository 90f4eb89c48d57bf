//! The lock file: which tool definitions a person has reviewed, pinned by hash.
//!
//! It is JSON (a reviewed definition may hold `null`s and any JSON a schema can, which TOML cannot
//! express), pretty-printed with sorted provider and tool names so that a lock file diffs well in
//! version control:
//!
//! ```json
//! { "version": 1,
//!   "providers": { "calendar": { "calendar_query": { "hash": "<sha256 hex>", "definition": { … } } } } }
//! ```
//!
//! `definition` keeps the reviewed fields so that a later review can show what changed.
//!
//! `code` pins each provider's code by role (`command`, `arg:N`, `component`,
//! `formatter:GLOB`): the SHA-256 and size of each file, with the path it was read from
//! (for people: an artifact that moved but did not change is still the reviewed one).
//! See [`CodePin`] and [`Lock::code_status`].
//!
//! On load,
//! every entry's hash is recomputed from its definition; a mismatch means the file was edited by
//! hand and is refused. Saving writes a temporary file in the same directory, fsyncs it, renames it
//! over the lock file and fsyncs the directory, so a crash leaves either the old or the new lock.

use crate::canonical::{definition_hash, reviewed_fields};
use crate::diff::Diff;
use crate::name::{NameError, is_valid_tool_name, validate_provider};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The lock file format version this crate reads and writes.
pub const LOCK_VERSION: u32 = 1;
/// The largest lock file read.
pub const MAX_LOCK_BYTES: u64 = 64 << 20;
/// The deepest definition that can be approved (the protocol layer already bounds depth; this keeps
/// the lock file readable by serde_json, whose recursion limit is 128).
pub const MAX_DEFINITION_DEPTH: usize = 64;

/// Whether a definition the provider offers now is the one that was reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewState {
    /// Same hash as the reviewed definition: the tool may be offered.
    Reviewed,
    /// Never reviewed (or the definition has no name): withhold it until reviewed.
    New,
    /// Reviewed once, but the definition changed since (a rug pull, or an honest update): withhold
    /// it until reviewed again, showing `diff`.
    Changed {
        /// What changed since the review.
        diff: Diff,
    },
}

/// Why the lock file could not be read, changed or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LockError {
    /// Reading failed.
    #[error("cannot read lock file {path}")]
    Read {
        /// The lock file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Writing failed; the previous lock file is intact.
    #[error("cannot write lock file {path} (the previous lock file is unchanged)")]
    Write {
        /// The lock file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a lock file this version understands.
    #[error("lock file {path} is invalid at line {line}, column {column}: {message}")]
    Parse {
        /// The lock file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// An entry's hash does not match its definition.
    #[error(
        "lock file {path}: the entry for {provider}/{tool} does not match its hash (edited by hand?); \
         remove the entry and review the tool again"
    )]
    Tampered {
        /// The lock file.
        path: PathBuf,
        /// The provider.
        provider: String,
        /// The tool.
        tool: String,
    },
    /// The definition to approve has no usable name.
    #[error("the definition has no `name` string, or the name is outside MCP's rules, so it cannot be approved")]
    BadName,
    /// The provider name is invalid.
    #[error(transparent)]
    Provider(#[from] NameError),
    /// The definition is nested too deeply to pin.
    #[error("the definition is nested deeper than {MAX_DEFINITION_DEPTH} levels and cannot be approved")]
    TooDeep,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    hash: String,
    definition: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockFile {
    version: u32,
    providers: BTreeMap<String, BTreeMap<String, Entry>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    code: BTreeMap<String, BTreeMap<String, CodePin>>,
}

/// One file of a provider's code, as reviewed: where it was, its SHA-256 and size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodePin {
    /// The file it was read from.
    pub path: String,
    /// Its SHA-256, lowercase hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// One role of a provider's code that is not as reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChange {
    /// The role: `command`, `arg:N`, `component`, `formatter:GLOB`.
    pub role: String,
    /// What was reviewed, if anything.
    pub reviewed: Option<CodePin>,
    /// What is there now, if anything.
    pub now: Option<CodePin>,
}

impl std::fmt::Display for CodeChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |pin: &Option<CodePin>| match pin {
            Some(pin) => format!("{} (sha256 {}, {} bytes)", pin.path, pin.sha256, pin.size),
            None => "(none)".to_owned(),
        };
        write!(f, "{}: {} -> {}", self.role, show(&self.reviewed), show(&self.now))
    }
}

/// Whether a provider's code is the reviewed code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeState {
    /// Every role as reviewed.
    Reviewed,
    /// Never reviewed: no pin for this provider at all.
    New,
    /// Reviewed, and some role differs since (a file changed, appeared or went).
    Changed(Vec<CodeChange>),
}

/// The reviewed definitions, by provider and tool, and the reviewed code, by provider
/// and role.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lock {
    providers: BTreeMap<String, BTreeMap<String, Entry>>,
    code: BTreeMap<String, BTreeMap<String, CodePin>>,
}

impl Lock {
    /// Reads a lock file. A missing file is an empty lock (every tool is new); any other problem is
    /// an error, so a damaged lock file never silently un-reviews or re-reviews tools.
    pub fn load(path: &Path) -> Result<Lock, LockError> {
        let read = |source| LockError::Read { path: path.to_owned(), source };
        let file = match std::fs::File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            other => other.map_err(read)?,
        };
        let Some(bytes) = crate::capped::read_capped(file, MAX_LOCK_BYTES).map_err(read)? else {
            return Err(read(std::io::Error::other(format!("larger than {MAX_LOCK_BYTES} bytes"))));
        };
        Lock::from_json(&bytes, path)
    }

    /// Parses lock file contents; `path` only names the file in errors.
    pub fn from_json(bytes: &[u8], path: &Path) -> Result<Lock, LockError> {
        let file: LockFile = serde_json::from_slice(bytes).map_err(|e| LockError::Parse {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        if file.version != LOCK_VERSION {
            return Err(LockError::Parse {
                path: path.to_owned(),
                line: 1,
                column: 1,
                message: format!("version {} is not supported (this build reads version {LOCK_VERSION})", file.version),
            });
        }
        for (provider, tools) in &file.providers {
            for (tool, entry) in tools {
                let named = entry.definition.get("name").and_then(Value::as_str) == Some(tool.as_str());
                if !named || definition_hash(&entry.definition) != entry.hash {
                    let (provider, tool) = (provider.clone(), tool.clone());
                    return Err(LockError::Tampered { path: path.to_owned(), provider, tool });
                }
            }
        }
        for pins in file.code.values() {
            for pin in pins.values() {
                let hex = pin.sha256.len() == 64
                    && pin.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                if !hex {
                    return Err(LockError::Parse {
                        path: path.to_owned(),
                        line: 1,
                        column: 1,
                        message: format!("a code pin of {} has no valid sha256", pin.path),
                    });
                }
            }
        }
        Ok(Lock { providers: file.providers, code: file.code })
    }

    /// Writes the lock atomically (temporary file, fsync, rename, fsync of the directory).
    pub fn save(&self, path: &Path) -> Result<(), LockError> {
        let write = |source| LockError::Write { path: path.to_owned(), source };
        let file = LockFile { version: LOCK_VERSION, providers: self.providers.clone(), code: self.code.clone() };
        let mut text = serde_json::to_string_pretty(&file).map_err(|e| write(e.into()))?;
        text.push('\n');
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| write(std::io::Error::other(e.to_string())))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(nonce)));
        let result = (|| {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            std::fs::File::open(dir)?.sync_all()
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(write)
    }

    /// Whether `definition` (as offered by `provider` now) is the reviewed one.
    pub fn status(&self, provider: &str, definition: &Value) -> ReviewState {
        let Some(name) = definition.get("name").and_then(Value::as_str) else { return ReviewState::New };
        match self.providers.get(provider).and_then(|tools| tools.get(name)) {
            None => ReviewState::New,
            Some(entry) if entry.hash == definition_hash(definition) => ReviewState::Reviewed,
            Some(entry) => ReviewState::Changed { diff: Diff::between(&entry.definition, definition) },
        }
    }

    /// Records `definition` as reviewed for `provider`, replacing any earlier review of the same
    /// tool. Returns the pinned hash. Call [`Lock::save`] to persist it.
    pub fn approve(&mut self, provider: &str, definition: &Value) -> Result<String, LockError> {
        validate_provider(provider)?;
        let name = definition.get("name").and_then(Value::as_str).filter(|n| is_valid_tool_name(n));
        let name = name.ok_or(LockError::BadName)?.to_owned();
        if depth(definition) > MAX_DEFINITION_DEPTH {
            return Err(LockError::TooDeep);
        }
        let hash = definition_hash(definition);
        let entry = Entry { hash: hash.clone(), definition: reviewed_fields(definition) };
        self.providers.entry(provider.to_owned()).or_default().insert(name, entry);
        Ok(hash)
    }

    /// Forgets the review of one tool; returns whether there was one.
    pub fn revoke(&mut self, provider: &str, tool: &str) -> bool {
        let Some(tools) = self.providers.get_mut(provider) else { return false };
        let removed = tools.remove(tool).is_some();
        if tools.is_empty() {
            self.providers.remove(provider);
        }
        removed
    }

    /// The pinned hash of a reviewed tool.
    pub fn hash(&self, provider: &str, tool: &str) -> Option<&str> {
        self.providers.get(provider)?.get(tool).map(|e| e.hash.as_str())
    }

    /// Whether `provider`'s code now (`now`, by role) is the reviewed code. Roles are
    /// compared by hash and size; a file that moved without changing is still reviewed.
    #[must_use]
    pub fn code_status(&self, provider: &str, now: &BTreeMap<String, CodePin>) -> CodeState {
        let Some(reviewed) = self.code.get(provider) else { return CodeState::New };
        let same = |a: &CodePin, b: &CodePin| a.sha256 == b.sha256 && a.size == b.size;
        let mut changes = Vec::new();
        let roles: std::collections::BTreeSet<&String> = reviewed.keys().chain(now.keys()).collect();
        for role in roles {
            match (reviewed.get(role), now.get(role)) {
                (Some(a), Some(b)) if same(a, b) => {}
                (before, after) => {
                    changes.push(CodeChange { role: role.clone(), reviewed: before.cloned(), now: after.cloned() });
                }
            }
        }
        if changes.is_empty() { CodeState::Reviewed } else { CodeState::Changed(changes) }
    }

    /// Records `code` as `provider`'s reviewed code, replacing what was reviewed before.
    /// Call [`Lock::save`] to persist it.
    ///
    /// # Errors
    ///
    /// An invalid provider name.
    pub fn approve_code(&mut self, provider: &str, code: BTreeMap<String, CodePin>) -> Result<(), LockError> {
        validate_provider(provider)?;
        self.code.insert(provider.to_owned(), code);
        Ok(())
    }

    /// Every reviewed `(provider, tool)`, sorted.
    pub fn reviewed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.providers.iter().flat_map(|(p, tools)| tools.keys().map(move |t| (p.as_str(), t.as_str())))
    }
}

/// Nesting depth of a JSON value, computed without recursion.
fn depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}
