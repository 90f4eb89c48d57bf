//! Who answers `ask`: the [`Approver`] trait, [`Unattended`] (the default: nobody can
//! answer, so the answer is no), [`TerminalApprover`] (a person at a terminal) and
//! [`CallerApprover`] (the person behind the caller, through its client).

use std::fmt;
use std::io::{BufRead, Read, Write};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use text_safety::escape_for_display;
use wasmgate_core::{Answer, BoxFuture, CallContext};

/// What needs approving.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// Running a call the policy marks `ask`.
    Call,
    /// Showing the model a result the injection detector flagged (policy `injection = "ask"`).
    Release {
        /// What the detector found, in model-safe words.
        flags: Vec<String>,
    },
}

/// One question for an approver.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The call's audit id.
    pub call: String,
    /// The provider.
    pub provider: String,
    /// The provider's own tool name.
    pub tool: String,
    /// The call's arguments (as the model sent them).
    pub arguments: Value,
    /// Why the policy asks.
    pub reason: String,
    /// What is to be approved.
    pub subject: Subject,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// Do not; the model reads `reason`.
    Denied {
        /// Why, in words fit for the model.
        reason: String,
    },
}

/// Answers `ask` verdicts. Implementations must answer in bounded time (deny when
/// nobody answers).
pub trait Approver: Send + Sync + fmt::Debug {
    /// A short name for the audit log (`unattended`, `terminal`, `elicitation`, ...).
    fn name(&self) -> &str;

    /// Decides one request.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
}

/// The reason given when nobody can approve.
pub const NOBODY: &str = "approval is required, and nobody is available to give it";

/// Denies everything: the approver for when nobody can answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unattended;

impl Approver for Unattended {
    fn name(&self) -> &str {
        "unattended"
    }

    fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async { Approval::Denied { reason: NOBODY.into() } })
    }
}

/// The reason given while the client is asked to answer on a retry.
pub const DEFERRED: &str = "approval was requested from the user; the client answers it by calling again";

/// The most characters of the arguments shown in a question to the caller, when they
/// are shown whole.
const MAX_QUESTION_ARGUMENTS: usize = 512;

/// Arguments too long to show whole are shown field by field, each value cut to its
/// share of [`MAX_QUESTION_ARGUMENTS`] but never to less than this.
const MIN_FIELD_CHARS: usize = 24;

/// The most fields named in a question, and the most characters of each name.
const MAX_QUESTION_FIELDS: usize = 64;
const MAX_FIELD_NAME_CHARS: usize = 64;

/// The arguments as a question shows them. Cut as one text, a long first field would
/// push the fields after it out of view (the recipient after a padded subject), so
/// arguments too long to show whole show every field, each value cut to its share.
fn shown_arguments(arguments: &Value) -> String {
    let whole = escape_for_display(&arguments.to_string());
    if whole.chars().count() <= MAX_QUESTION_ARGUMENTS {
        return whole;
    }
    let Value::Object(fields) = arguments else { return cut(whole, MAX_QUESTION_ARGUMENTS) };
    let share = (MAX_QUESTION_ARGUMENTS / fields.len().clamp(1, MAX_QUESTION_FIELDS)).max(MIN_FIELD_CHARS);
    let mut shown: Vec<String> = fields
        .iter()
        .take(MAX_QUESTION_FIELDS)
        .map(|(name, value)| {
            let name = cut(escape_for_display(&Value::String(name.clone()).to_string()), MAX_FIELD_NAME_CHARS);
            format!("{name}: {}", cut(escape_for_display(&value.to_string()), share))
        })
        .collect();
    if fields.len() > MAX_QUESTION_FIELDS {
        shown.push(format!("and {} more fields not shown", fields.len() - MAX_QUESTION_FIELDS));
    }
    format!("{{{}}}", shown.join(", "))
}

/// `text` cut to `max` characters, the cut marked.
fn cut(mut text: String, max: usize) -> String {
    text_safety::truncate(&mut text, max);
    text
}

/// Asks the person behind the caller of the call, when the caller offers a way
/// ([`wasmgate_core::CallContext::current`]'s `ask`: an MCP client's elicitation), and
/// `fallback` otherwise. The approver of `wasmgate serve`.
#[derive(Debug)]
pub struct CallerApprover {
    fallback: Arc<dyn Approver>,
}

impl CallerApprover {
    /// Asks the caller when it can answer, else `fallback`.
    #[must_use]
    pub fn new(fallback: Arc<dyn Approver>) -> Self {
        Self { fallback }
    }

    /// The question put to the caller: what runs, with which arguments, and why.
    fn question(request: &ApprovalRequest) -> String {
        let arguments = shown_arguments(&request.arguments);
        let what = format!(
            "wasmgate: the agent wants to run `{}` of the provider `{}` with the arguments {arguments}. The policy \
             says: {}.",
            escape_for_display(&request.tool),
            escape_for_display(&request.provider),
            escape_for_display(&request.reason),
        );
        match &request.subject {
            Subject::Call => format!("{what} Allow this call?"),
            Subject::Release { flags } => format!(
                "{what} Its result looks like it carries instructions ({}). Show it to the model?",
                flags.join("; ")
            ),
        }
    }
}

impl Approver for CallerApprover {
    fn name(&self) -> &str {
        "caller"
    }

    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let Some(ask) = CallContext::current().ask else { return self.fallback.approve(request).await };
            let deferrable = request.subject == Subject::Call;
            match ask.confirm(Self::question(request), deferrable).await {
                Answer::Yes => Approval::Approved,
                Answer::No => Approval::Denied { reason: "the user declined".into() },
                Answer::Deferred => Approval::Denied { reason: DEFERRED.into() },
            }
        })
    }
}

type Terminal = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks a person at a terminal, one question at a time. Anything but `y` or `yes` is no,
/// and so is a terminal that closes.
#[derive(Clone)]
pub struct TerminalApprover {
    io: Arc<Mutex<Terminal>>,
}

impl fmt::Debug for TerminalApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TerminalApprover")
    }
}

/// The longest answer read; the rest of a longer line is ignored.
const MAX_ANSWER: u64 = 64;

impl TerminalApprover {
    /// Asks on `output` and reads answers from `input`.
    pub fn new(input: impl BufRead + Send + 'static, output: impl Write + Send + 'static) -> Self {
        Self { io: Arc::new(Mutex::new((Box::new(input), Box::new(output)))) }
    }

    /// The controlling terminal (`/dev/tty`), or `None` when there is none (a service,
    /// CI): then use [`Unattended`].
    #[must_use]
    pub fn open_tty() -> Option<Self> {
        let input = std::fs::File::open("/dev/tty").ok()?;
        let output = std::fs::OpenOptions::new().write(true).open("/dev/tty").ok()?;
        Some(Self::new(std::io::BufReader::new(input), output))
    }

    fn ask(io: &Mutex<Terminal>, request: &ApprovalRequest) -> Approval {
        let Ok(mut io) = io.lock() else { return Approval::Denied { reason: "the terminal is unavailable".into() } };
        let (input, output) = &mut *io;
        let question = match &request.subject {
            Subject::Call => "Allow this call?".to_owned(),
            Subject::Release { flags } => {
                format!("Its result looks like it carries instructions ({}). Show it to the model?", flags.join("; "))
            }
        };
        let arguments = escape_for_display(&request.arguments.to_string());
        let asked = write!(
            output,
            "\nwasmgate: the agent wants to run {} of provider {}\n  arguments: {arguments}\n  policy: {}\n{question} [y/N] ",
            escape_for_display(&request.tool),
            escape_for_display(&request.provider),
            escape_for_display(&request.reason),
        )
        .and_then(|()| output.flush());
        if asked.is_err() {
            return Approval::Denied { reason: "the terminal is unavailable".into() };
        }
        let mut answer = String::new();
        let read = input.take(MAX_ANSWER).read_line(&mut answer);
        match (read, answer.trim().to_ascii_lowercase().as_str()) {
            (Ok(_), "y" | "yes") => Approval::Approved,
            _ => Approval::Denied { reason: "the person at the terminal declined".into() },
        }
    }
}

impl Approver for TerminalApprover {
    fn name(&self) -> &str {
        "terminal"
    }

    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        let io = Arc::clone(&self.io);
        let request = request.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || Self::ask(&io, &request))
                .await
                .unwrap_or_else(|_| Approval::Denied { reason: "the terminal is unavailable".into() })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use serde_json::json;

    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call: "c1".into(),
            provider: "calendar".into(),
            tool: "calendar_create".into(),
            arguments: json!({"title": "x\u{202e}y"}),
            reason: "the policy requires approval for `calendar_create`".into(),
            subject: Subject::Call,
        }
    }

    #[tokio::test]
    async fn yes_approves_and_anything_else_or_nothing_declines() {
        for (answer, approved) in [("y\n", true), ("YES\n", true), ("n\n", false), ("", false), ("yess\n", false)] {
            let approver = TerminalApprover::new(Cursor::new(answer.as_bytes().to_vec()), std::io::sink());
            let got = approver.approve(&request()).await;
            assert_eq!(got == Approval::Approved, approved, "{answer:?}");
        }
    }

    #[tokio::test]
    async fn the_question_shows_hidden_characters_escaped() {
        let shown = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().map_err(|_| std::io::ErrorKind::Other)?.extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let approver = TerminalApprover::new(Cursor::new(b"n\n".to_vec()), Shared(Arc::clone(&shown)));
        // A reason can hold what the model wrote (the name of an argument it chose).
        let reason = "argument `\u{1b}[2J` carries a URL first seen in a result".to_owned();
        approver.approve(&ApprovalRequest { reason, ..request() }).await;
        let text = String::from_utf8(shown.lock().map(|s| s.clone()).unwrap_or_default()).unwrap_or_default();
        assert!(text.contains("calendar_create of provider calendar"), "{text}");
        assert!(!text.contains('\u{202e}') && !text.contains('\u{1b}'), "{text:?}");
    }

    #[test]
    fn long_arguments_show_every_field_so_none_hides_behind_a_long_one() {
        let short = json!({"title": "Lunch", "when": "12:00"});
        assert_eq!(shown_arguments(&short), r#"{"title":"Lunch","when":"12:00"}"#);
        let padded = json!({"subject": "x".repeat(2000), "to": "evil@example.com", "cc": ["a", "b"]});
        let shown = shown_arguments(&padded);
        assert!(shown.contains(r#""to": "evil@example.com""#), "{shown}");
        assert!(shown.contains(r#""cc": ["a","b"]"#), "{shown}");
        assert!(shown.contains(r#""subject": "xxx"#) && shown.contains(text_safety::CUT_MARK), "{shown}");
        assert!(shown.chars().count() < 700, "{}", shown.chars().count());
        let many: serde_json::Map<String, Value> =
            (0..100).map(|n| (format!("field{n:03}"), Value::String("y".repeat(50)))).collect();
        let shown = shown_arguments(&Value::Object(many));
        assert!(shown.contains("field063") && !shown.contains("field064"), "{shown}");
        assert!(shown.ends_with("and 36 more fields not shown}"), "{shown}");
        let list = json!(["z".repeat(1000)]);
        assert_eq!(
            shown_arguments(&list).chars().count(),
            MAX_QUESTION_ARGUMENTS + text_safety::CUT_MARK.chars().count()
        );
        let hidden = json!({"note": format!("{}\u{202e}", "w".repeat(600)), "to": "x\u{200b}y"});
        assert!(!shown_arguments(&hidden).contains(['\u{202e}', '\u{200b}']));
    }

    #[tokio::test]
    async fn unattended_denies() {
        assert_eq!(Unattended.approve(&request()).await, Approval::Denied { reason: NOBODY.into() });
    }
}
