//! A tool source the test controls, a policy, a lock and an audit log in a tempdir.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wasmgate_audit::{AuditLog, Entry, Event, Options};
use wasmgate_core::{Attachment, BoxFuture, Naming, Offer, Tool, ToolResult, ToolSource, ToolSpec};
use wasmgate_guard::{Approver, Budgets, Guard, GuardedToolset, Provenance};
use wasmgate_policy::{Lock, Policy, exposed_name};

/// Offers tools whose calls answer `reply` and are counted.
#[derive(Debug)]
pub struct Source {
    pub provider: String,
    pub definitions: Mutex<Vec<Value>>,
    pub reply: Mutex<String>,
    /// Passed on beside the reply's text.
    pub attachments: Mutex<Vec<Attachment>>,
    /// The names its tools are shown under.
    pub naming: Mutex<Naming>,
    /// Its results' structured content.
    pub structured: Mutex<Option<Value>>,
    pub calls: Arc<AtomicUsize>,
}

impl Source {
    pub fn new(provider: &str, definitions: Vec<Value>) -> Arc<Self> {
        Arc::new(Self {
            provider: provider.into(),
            definitions: Mutex::new(definitions),
            reply: Mutex::new("ok".into()),
            attachments: Mutex::default(),
            naming: Mutex::default(),
            structured: Mutex::default(),
            calls: Arc::default(),
        })
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn offer(&self, definition: &Value) -> Offer {
        let name = definition["name"].as_str().unwrap().to_owned();
        let spec = ToolSpec {
            name: exposed_name(&self.provider, &name, *self.naming.lock().unwrap()).unwrap(),
            description: definition["description"].as_str().unwrap_or_default().into(),
            input_schema: definition["inputSchema"].clone(),
        };
        let calls = Arc::clone(&self.calls);
        let reply = self.reply.lock().unwrap().clone();
        let attachments = self.attachments.lock().unwrap().clone();
        let structured = self.structured.lock().unwrap().clone();
        let tool = Tool::from_fn(spec, move |_, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            let result = ToolResult {
                attachments: attachments.clone(),
                structured: structured.clone().map(Box::new),
                ..ToolResult::text(reply.clone())
            };
            async move { Ok(result) }
        });
        Offer { provider: self.provider.clone(), name, definition: definition.clone(), tool }
    }
}

impl ToolSource for Source {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        let offers = self.definitions.lock().unwrap().iter().map(|d| self.offer(d)).collect();
        Box::pin(async move { (offers, None) })
    }
}

pub fn definition(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

pub const POLICY: &str = r#"
[providers.calendar]
injection = "flag"
resources = ["file:///docs/*"]

[providers.calendar.tools]
calendar_query = "allow"
calendar_create = "ask"
calendar_delete = "deny"

[providers.strict]
injection = "withhold"
resources = ["file:///docs/*"]

[providers.strict.tools]
read = "allow"

[providers.careful]
injection = "ask"

[providers.careful.tools]
read = "allow"
"#;

/// Everything a guard needs, in a tempdir.
#[derive(Debug)]
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub guard: Arc<Guard>,
}

impl Setup {
    /// A guard with [`POLICY`], every definition of `reviewed` approved, and `approver`.
    pub fn new(reviewed: &[(&Source, Value)], approver: Arc<dyn Approver>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::with_audit(dir, reviewed, approver, None)
    }

    pub fn with_audit(
        dir: tempfile::TempDir,
        reviewed: &[(&Source, Value)],
        approver: Arc<dyn Approver>,
        audit_path: Option<PathBuf>,
    ) -> Self {
        Self::with_policy(dir, POLICY, reviewed, approver, audit_path)
    }

    /// A guard with the policy `policy`.
    pub fn with_policy(
        dir: tempfile::TempDir,
        policy: &str,
        reviewed: &[(&Source, Value)],
        approver: Arc<dyn Approver>,
        audit_path: Option<PathBuf>,
    ) -> Self {
        Self::with_memory(dir, policy, reviewed, approver, audit_path, Provenance::default())
    }

    /// [`with_policy`](Self::with_policy) with the data-flow memory `provenance`.
    pub fn with_memory(
        dir: tempfile::TempDir,
        policy: &str,
        reviewed: &[(&Source, Value)],
        approver: Arc<dyn Approver>,
        audit_path: Option<PathBuf>,
        provenance: Provenance,
    ) -> Self {
        let policy = Policy::from_toml(policy, "test policy").unwrap();
        let mut lock = Lock::default();
        for (source, definition) in reviewed {
            lock.approve(&source.provider, definition).unwrap();
        }
        let audit_path = audit_path.unwrap_or_else(|| dir.path().join("audit.jsonl"));
        let audit = Arc::new(AuditLog::open(&audit_path, Options::default()).unwrap());
        let guard = Guard::with_shared(
            policy,
            lock,
            Some(dir.path().join("wasmgate.lock")),
            approver,
            audit,
            (Budgets::default(), provenance),
        );
        Self { dir, guard }
    }

    pub fn toolset(&self, sources: &[Arc<Source>]) -> GuardedToolset {
        let sources = sources.iter().map(|s| Arc::clone(s) as Arc<dyn ToolSource>).collect();
        GuardedToolset::new(Arc::clone(&self.guard), sources)
    }

    /// The audit records so far, as JSON (after a durable marker, so every record
    /// queued before it is on disk; the marker itself is left out).
    pub fn records(&self) -> Vec<Value> {
        let marker = Entry::log(Event::Warning { message: "test: sync".into() });
        self.guard.audit().append(marker).unwrap();
        let text = std::fs::read_to_string(self.guard.audit().path()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["message"] != "test: sync")
            .collect()
    }

    pub fn events(&self) -> Vec<String> {
        self.records().iter().map(|r| r["event"].as_str().unwrap_or_default().to_owned()).collect()
    }
}
