//! [`CallContext`]: what the caller of a tool offers besides the arguments: a place
//! for progress updates, and a way to ask the person behind the caller ([`Ask`]).
//!
//! It travels with the call as a task-local ([`CallContext::scope`]), so a
//! [`Tool`](crate::Tool) stays a spec and an `execute`: a tool that can report progress
//! looks for a sink with [`CallContext::current`], and one that cannot never notices.
//! Whoever serves the call (the MCP server face, for one) opens the scope; nothing is
//! carried across a spawned task.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::{Map, Value};

/// One progress update of a call in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far; increases with every update.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// A short message for a person; the reporter cleans it of control characters.
    pub message: Option<String>,
}

/// Receives progress updates. Called from whatever task produced the update: keep it
/// quick and never block.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// How the person behind the caller answered a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// They confirmed.
    Yes,
    /// They declined, dismissed the question, or could not be asked.
    No,
    /// The question went to the caller, who will answer it by calling again (the
    /// 2026-07-28 `input_required` round trip): treat it as not confirmed for now.
    Deferred,
}

/// A way to ask the person behind the caller to confirm something (an MCP client's
/// elicitation, for one).
pub trait Ask: Send + Sync {
    /// Asks `question`. `deferrable`: whether the answer may come with a later call
    /// ([`Answer::Deferred`]); a question about something already done (showing a
    /// result) is not, and is then answered [`Answer::No`] when it cannot be asked now.
    fn confirm(&self, question: String, deferrable: bool) -> crate::BoxFuture<'static, Answer>;
}

/// Why the caller's side did not answer a provider's request for input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputRefusal {
    /// It cannot, will not, or may not answer: the provider is told so.
    Declined(String),
    /// It answers with a later call (2026-07-28 `input_required`): the request is put
    /// off with [`Input::defer`].
    Deferred,
}

/// The caller's side as a tool's provider sees it: its own requests for input
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`) go here.
pub trait Input: Send + Sync {
    /// Whether it can answer `method` at all (what the provider is told it may ask);
    /// `elicitation/create:url` asks about URL-mode elicitation.
    fn can(&self, method: &str) -> bool;

    /// Asks `method` with `params`: the result object, or why there is none.
    fn request(
        &self,
        method: String,
        params: Map<String, Value>,
    ) -> crate::BoxFuture<'static, Result<Value, InputRefusal>>;

    /// Puts the provider's round off to the caller's next call: `requests` (key to
    /// `{method, params}`) for the caller to answer, `answered` (key to result) given
    /// already, and the provider's `state`. False when this caller cannot be asked later.
    fn defer(&self, requests: Map<String, Value>, answered: Map<String, Value>, state: Option<String>) -> bool;

    /// Why `method` is kept from the provider whatever the caller could answer (a policy
    /// that denies sampling, say), or `None` when [`can`](Self::can) is up to the caller.
    /// Default: `None`.
    fn withheld(&self, method: &str) -> Option<String> {
        let _ = method;
        None
    }
}

/// A call that carries on from a round of input put off to the caller: the answers
/// (by the provider's keys) and the provider's state, as the caller's retry brought
/// them back (checked by whoever served the retry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// The answers, by key.
    pub responses: Map<String, Value>,
    /// The provider's `requestState`.
    pub state: Option<String>,
}

/// The severity of a log message, in RFC 5424's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    const ALL: [(Self, &'static str); 8] = [
        (Self::Debug, "debug"),
        (Self::Info, "info"),
        (Self::Notice, "notice"),
        (Self::Warning, "warning"),
        (Self::Error, "error"),
        (Self::Critical, "critical"),
        (Self::Alert, "alert"),
        (Self::Emergency, "emergency"),
    ];

    /// The level named `name` (MCP's names), if it is one.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(level, _)| *level)
    }

    /// Its MCP name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(level, _)| *level == self).map_or("info", |(_, n)| n)
    }
}

/// One log message of a provider, cleaned, for the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// Who logged it.
    pub logger: String,
    /// What it says (a string or a JSON value, cleaned).
    pub data: Value,
}

/// Where a call's log messages go, from which level up.
#[derive(Clone)]
pub struct LogSink {
    /// The least severe level the caller wants.
    pub level: LogLevel,
    /// Receives each message. Called from whatever task produced it: keep it quick.
    pub send: Arc<dyn Fn(LogMessage) + Send + Sync>,
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogSink").field("level", &self.level).finish_non_exhaustive()
    }
}

/// What the caller offers a call.
#[derive(Clone, Default)]
pub struct CallContext {
    /// Where progress updates go, if the caller wants them.
    pub progress: Option<ProgressSink>,
    /// Whom to ask when the call needs a person's confirmation, if anyone.
    pub ask: Option<Arc<dyn Ask>>,
    /// Where the provider's own requests for input go, if anywhere.
    pub input: Option<Arc<dyn Input>>,
    /// The answers a retry brought to a round of input put off to the caller.
    pub resume: Option<Resume>,
    /// Where the provider's log messages go, if the caller wants them.
    pub log: Option<LogSink>,
    /// Who made the call, when the one serving it knows.
    pub caller: Option<Arc<Caller>>,
    /// The conversation the call belongs to, when the one serving it knows: what the
    /// results read earlier in it said is what the data-flow rules judge the call by.
    /// Names from different callers never collide (the server face puts the caller's
    /// session or subject in it).
    pub conversation: Option<Arc<str>>,
}

/// Who made a call: an access token's subject and claims over HTTP, the local user over
/// stdio.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// Its name: the token's `sub`, or the local user's.
    pub subject: String,
    /// Every claim of its token (none for the local user).
    pub claims: Map<String, Value>,
}

impl Caller {
    /// What a policy may say of it: its token's claims, and `subject`.
    #[must_use]
    pub fn facts(&self) -> Map<String, Value> {
        let mut facts = self.claims.clone();
        facts.insert("subject".into(), Value::String(self.subject.clone()));
        facts
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)"))
            .field("ask", &self.ask.as_ref().map(|_| "dyn Ask"))
            .field("input", &self.input.as_ref().map(|_| "dyn Input"))
            .field("resume", &self.resume.is_some())
            .field("log", &self.log.as_ref().map(|l| l.level))
            .field("caller", &self.caller.as_ref().map(|c| c.subject.as_str()))
            .field("conversation", &self.conversation)
            .finish()
    }
}

tokio::task_local! {
    static CONTEXT: CallContext;
}

impl CallContext {
    /// Runs `call` with `context` as its [`current`](Self::current) context.
    pub async fn scope<F: Future>(context: CallContext, call: F) -> F::Output {
        CONTEXT.scope(context, call).await
    }

    /// The context of the call running on this task; the empty one outside any
    /// [`scope`](Self::scope).
    #[must_use]
    pub fn current() -> CallContext {
        CONTEXT.try_with(CallContext::clone).unwrap_or_default()
    }

    /// The caller of the call running on this task, if one is named: [`current`](Self::current)'s
    /// `caller` without copying the rest of the context (asked once per audit record).
    #[must_use]
    pub fn caller() -> Option<Arc<Caller>> {
        CONTEXT.try_with(|context| context.caller.clone()).ok().flatten()
    }

    /// The conversation of the call running on this task, if one is named.
    #[must_use]
    pub fn conversation() -> Option<Arc<str>> {
        CONTEXT.try_with(|context| context.conversation.clone()).ok().flatten()
    }
}

/// The name of a conversation: the transport's own (`base`: a stdio connection, a
/// session, a caller), narrowed by the name the client gave it (`named`, from `_meta`),
/// if it gave one. No two pairs make the same name: the base's length comes first.
#[must_use]
pub fn conversation_name(base: Option<&str>, named: Option<&str>) -> Option<Arc<str>> {
    match (base, named) {
        (Some(base), None) => Some(Arc::from(base)),
        (Some(base), Some(named)) => Some(format!("{}:{base}/{named}", base.len()).into()),
        (None, Some(named)) => Some(format!("-/{named}").into()),
        (None, None) => None,
    }
}

/// Whose a conversation is: the base of one [`conversation_name`] made with a name (as
/// it wrote it: length, `:`, base), and any other name itself. The conversations a
/// client names within one base are its to open without end, and are bounded together.
#[must_use]
pub fn conversation_owner(conversation: &str) -> &str {
    if conversation.starts_with("-/") {
        return "-";
    }
    let digits = conversation.bytes().take_while(u8::is_ascii_digit).count();
    let owner = conversation
        .get(..digits)
        .and_then(|len| len.parse::<usize>().ok())
        .and_then(|len| digits.checked_add(1)?.checked_add(len))
        .filter(|_| conversation.as_bytes().get(digits) == Some(&b':'))
        .filter(|end| conversation.as_bytes().get(*end) == Some(&b'/'))
        .and_then(|end| conversation.get(..end));
    owner.unwrap_or(conversation)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn a_named_conversation_is_owned_by_its_base_and_no_name_passes_for_another() {
        use super::{conversation_name, conversation_owner};
        for base in ["stdio 0", "alice", "12:x/y", "a/b", "", "\u{e9}t\u{e9}"] {
            for named in ["run-1", "", "1:a/b", "\u{e9}"] {
                let name = conversation_name(Some(base), Some(named)).unwrap();
                let own = conversation_name(Some(base), None).unwrap();
                assert_eq!(conversation_owner(&name), format!("{}:{base}", base.len()), "{name:?}");
                assert_ne!(
                    conversation_owner(&name),
                    conversation_owner(&conversation_name(Some("other"), Some(named)).unwrap())
                );
                // A base on its own owns itself (unless it reads as a named one).
                if !own.contains('/') {
                    assert_eq!(conversation_owner(&own), &*own);
                }
            }
        }
        assert_eq!(conversation_owner(&conversation_name(None, Some("x")).unwrap()), "-");
        for odd in ["99:abc/d", "3:ab", "3:abc", ":x/y", "007:abcdefg/x", "18446744073709551616:x/y"] {
            let owner = conversation_owner(odd);
            assert!(odd.starts_with(owner), "{odd:?} {owner:?}");
        }
        assert_eq!(conversation_owner("3:abc/d"), "3:abc");
        assert_eq!(conversation_owner("99:abc/d"), "99:abc/d");
    }
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn the_sink_is_seen_inside_the_scope_only() {
        assert!(CallContext::current().progress.is_none());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let sink: ProgressSink = Arc::new(move |p: Progress| log.lock().unwrap().push(p.progress));
        CallContext::scope(CallContext { progress: Some(sink), ..CallContext::default() }, async {
            let sink = CallContext::current().progress.unwrap();
            sink(Progress { progress: 1.0, total: None, message: None });
        })
        .await;
        assert_eq!(*seen.lock().unwrap(), [1.0]);
        assert!(CallContext::current().progress.is_none());
    }
}
