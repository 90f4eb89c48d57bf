//! The pages and the actions, and who may see them.
//!
//! Every page is for a reviewer or an admin of the policy's `[console]` (the audit log
//! for an admin only), signed in (a session) or carrying a bearer token `/mcp` takes.
//! Without either, a page sends the browser to sign in and an action is refused; with a
//! token of anyone else, both are 403. An action needs a session and its CSRF token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use askama::Template;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq as _;
use wasmgate_audit::{Filter, Verified};
use wasmgate_gateway::Decision;
use wasmgate_guard::Reviewer;
use wasmgate_policy::ConsoleRole;

use crate::Console;
use crate::html::{Frame, message, pretty, render};
use crate::sessions::Session;

/// Records an audit page shows.
const PAGE_RECORDS: usize = 50;

/// The longest details of an audit record shown (the rest is cut).
const MAX_DETAILS_CHARS: usize = 600;

/// Who is asking, and what they may do.
pub(crate) struct Visitor {
    pub subject: String,
    pub role: ConsoleRole,
    /// Their session: its id and what it holds (none for a bearer token).
    pub session: Option<(String, Session)>,
}

impl Visitor {
    fn frame(&self, title: &'static str, here: &'static str) -> Frame {
        Frame {
            title,
            here,
            subject: self.subject.clone(),
            role: match self.role {
                ConsoleRole::Reviewer => "reviewer",
                ConsoleRole::Admin => "admin",
            },
            admin: self.role == ConsoleRole::Admin,
            csrf: self.session.as_ref().map(|(_, s)| s.csrf.clone()),
            flash: self.session.as_ref().and_then(|(_, s)| s.flash.clone()),
        }
    }

    fn csrf(&self) -> String {
        self.session.as_ref().map(|(_, s)| s.csrf.clone()).unwrap_or_default()
    }

    /// How the audit log and the answers name them.
    fn shown(&self) -> String {
        format!("{} (console)", self.subject)
    }
}

/// The value of cookie `name`, if the request carries it.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name && !value.is_empty()).then_some(value)
        })
}

fn forbidden(text: impl Into<String>) -> Response {
    message(StatusCode::FORBIDDEN, "Forbidden", text)
}

impl Console {
    /// The visitor of a request that needs `need`; `form`: an action's form, whose CSRF
    /// token must be the session's. The refusal otherwise.
    pub(crate) async fn visitor(
        &self,
        headers: &HeaderMap,
        need: ConsoleRole,
        form: Option<&HashMap<String, String>>,
    ) -> Result<Visitor, Response> {
        let session = cookie(headers, self.cookies().name(crate::cookies::Cookie::Session))
            .and_then(|id| Some((id.to_owned(), self.sessions.get(id)?)));
        let (subject, facts, session) = match session {
            Some((id, session)) => (session.subject.clone(), session.facts.clone(), Some((id, session))),
            // The token as `/mcp` reads it (one `Authorization` header, `Bearer` in any case).
            None => match headers.contains_key(header::AUTHORIZATION).then(|| wasmgate_server::bearer(headers)) {
                Some(token) => match self.parts.authenticator.authenticate(token).await {
                    Ok(caller) => (caller.subject.clone(), caller.facts(), None),
                    Err(failure) => {
                        return Err(message(StatusCode::UNAUTHORIZED, "Not signed in", failure.to_string()));
                    }
                },
                None if form.is_some() => return Err(forbidden("Sign in to the console first.")),
                None => return Err(Redirect::to("/console/login").into_response()),
            },
        };
        let role = self.role(&facts).ok_or_else(|| {
            forbidden(format!("{subject} is neither a reviewer nor an admin of this gateway (the policy's [console])."))
        })?;
        if role < need {
            return Err(forbidden(format!("The audit log is for admins; {subject} is a reviewer.")));
        }
        if let Some(form) = form {
            let Some((_, session)) = &session else {
                return Err(forbidden("Actions need a console sign-in: a bearer token can read pages only."));
            };
            let sent = form.get("csrf").map(String::as_bytes).unwrap_or_default();
            if session.csrf.is_empty() || !bool::from(sent.ct_eq(session.csrf.as_bytes())) {
                return Err(forbidden("The form carries no valid CSRF token: load the page again and resubmit."));
            }
        }
        Ok(Visitor { subject, role, session })
    }

    /// What the policy's `[console]` makes of `facts`, now.
    pub(crate) fn role(&self, facts: &Map<String, Value>) -> Option<ConsoleRole> {
        self.parts.gateway.guard.policy().console_role(facts)
    }

    /// An action's answer: `outcome` left for the visitor's next page, and the browser
    /// sent back to the page at `to`.
    fn done(&self, visitor: &Visitor, outcome: String, to: &'static str) -> Response {
        if let Some((id, _)) = &visitor.session {
            self.sessions.flash(id, outcome);
        }
        Redirect::to(to).into_response()
    }
}

struct ProviderRow {
    name: String,
    kind: String,
    trouble: Option<String>,
    confinement: String,
    grants: String,
}

struct ToolRow {
    exposed: String,
    provider: String,
    state: String,
    detail: String,
    sink: String,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct Overview {
    frame: Frame,
    providers: Vec<ProviderRow>,
    tools: Vec<ToolRow>,
    pending_asks: usize,
}

/// `/console`: the providers and their state, the tools and their verdicts.
pub(crate) async fn overview(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Reviewer, None).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let gateway = &console.parts.gateway;
    let policy = gateway.guard.policy();
    let providers = gateway
        .providers()
        .into_iter()
        .map(|p| {
            let rules = policy.provider(&p.name);
            let mut grants: Vec<String> =
                rules.map(|r| r.network_hosts.iter().map(ToString::to_string).collect()).unwrap_or_default();
            grants.extend(rules.into_iter().flat_map(|r| r.network_ports.iter().map(|port| format!("port {port}"))));
            ProviderRow {
                trouble: gateway.provider_trouble(&p.name),
                kind: format!("{:?}", p.kind).to_lowercase(),
                confinement: p.confinement.clone().unwrap_or_else(|| "none (not a stdio server)".into()),
                grants: if grants.is_empty() { "none".into() } else { grants.join(", ") },
                name: p.name,
            }
        })
        .collect();
    let tools = gateway
        .tool_statuses()
        .await
        .into_iter()
        .map(|t| ToolRow {
            state: t.state.to_string(),
            detail: match &t.state {
                wasmgate_gateway::ToolState::Changed(d) | wasmgate_gateway::ToolState::Unusable(d) => d.clone(),
                _ => String::new(),
            },
            sink: t.sink.unwrap_or_default(),
            exposed: t.exposed,
            provider: t.provider,
        })
        .collect();
    let pending_asks = gateway.guard.reviewers().pending_anywhere().await.len();
    let page = Overview { frame: visitor.frame("Providers and tools", "overview"), providers, tools, pending_asks };
    render(StatusCode::OK, &page)
}

struct DefinitionRow {
    provider: String,
    tool: String,
    hash: String,
    changed: bool,
    diff: Option<String>,
    definition: String,
    sink: Option<String>,
    schema: Option<String>,
    warnings: Vec<String>,
    unusable: Option<String>,
    decidable: bool,
}

struct CodeRow {
    provider: String,
    hash: Option<String>,
    changed: bool,
    pins: String,
    changes: Vec<String>,
    grants: Vec<String>,
    fetches: Option<String>,
    unreadable: Option<String>,
}

#[derive(Template)]
#[template(path = "reviews.html")]
struct Reviews {
    frame: Frame,
    csrf: String,
    definitions: Vec<DefinitionRow>,
    code: Vec<CodeRow>,
}

/// `/console/reviews`: what waits for review, with its diff, and the forms to decide.
pub(crate) async fn reviews(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Reviewer, None).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let reviews = match console.parts.gateway.reviews(&console.parts.config_path).await {
        Ok(reviews) => reviews,
        Err(error) => {
            return message(StatusCode::INTERNAL_SERVER_ERROR, "Reviews cannot be read", error.one_line());
        }
    };
    let csrf = visitor.csrf();
    let definitions = reviews
        .definitions
        .into_iter()
        .map(|d| DefinitionRow {
            decidable: !csrf.is_empty() && d.unusable.is_none(),
            definition: pretty(&d.definition),
            provider: d.provider,
            tool: d.tool,
            hash: d.hash,
            changed: d.changed,
            diff: d.diff,
            sink: d.sink,
            schema: d.schema,
            warnings: d.warnings,
            unusable: d.unusable,
        })
        .collect();
    let code = reviews
        .code
        .into_iter()
        .map(|c| CodeRow {
            pins: pretty(&serde_json::to_value(&c.pins).unwrap_or_default()),
            provider: c.provider,
            hash: c.hash,
            changed: c.changed,
            changes: c.changes,
            grants: c.grants,
            fetches: c.fetches,
            unreadable: c.unreadable,
        })
        .collect();
    render(StatusCode::OK, &Reviews { frame: visitor.frame("Reviews", "reviews"), csrf, definitions, code })
}

/// `true` or `false` as a form sends it; anything else is no answer.
fn yes_no(form: &HashMap<String, String>) -> Option<bool> {
    match form.get("approve").map(String::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// `POST /console/reviews/decide`: approve or refuse what a review showed.
pub(crate) async fn decide(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Reviewer, Some(&form)).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let field = |name: &str| form.get(name).filter(|v| !v.is_empty()).cloned();
    let (Some(provider), Some(hash), Some(approve)) = (field("provider"), field("hash"), yes_no(&form)) else {
        return message(
            StatusCode::BAD_REQUEST,
            "Not a decision",
            "A decision names a provider, a hash and an answer.",
        );
    };
    let decision = Decision { provider, tool: field("tool"), hash, approve };
    let parts = &console.parts;
    let outcome = match parts.backend.decide(&parts.gateway, &parts.config_path, &decision, &visitor.shown()).await {
        Ok(outcome) => outcome,
        Err(error) => format!("refused: {error}"),
    };
    console.done(&visitor, outcome, "/console/reviews")
}

struct AskRow {
    id: String,
    caller: String,
    provider: String,
    tool: String,
    reason: String,
    subject: &'static str,
    arguments: String,
    left: String,
    own: bool,
}

#[derive(Template)]
#[template(path = "approvals.html")]
struct Approvals {
    frame: Frame,
    csrf: String,
    asks: Vec<AskRow>,
}

/// `/console/approvals`: the calls waiting for a reviewer.
pub(crate) async fn approvals(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Reviewer, None).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let asks = console
        .parts
        .gateway
        .guard
        .reviewers()
        .pending_anywhere()
        .await
        .into_iter()
        .map(|ask| AskRow {
            own: ask.caller.as_deref() == Some(visitor.subject.as_str()),
            caller: ask.caller.unwrap_or_else(|| "nobody named".into()),
            subject: if ask.subject == "result" { "to show a flagged result" } else { "to run" },
            arguments: pretty(&ask.arguments),
            left: format!("{} s", ask.deadline_ms.saturating_sub(now) / 1000),
            id: ask.id,
            provider: ask.provider,
            tool: ask.tool,
            reason: ask.reason,
        })
        .collect();
    let csrf = visitor.csrf();
    render(StatusCode::OK, &Approvals { frame: visitor.frame("Approvals", "approvals"), csrf, asks })
}

/// `POST /console/approvals/answer`: approve or deny a waiting call.
pub(crate) async fn answer(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Reviewer, Some(&form)).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let (Some(id), Some(approve)) = (form.get("id"), yes_no(&form)) else {
        return message(StatusCode::BAD_REQUEST, "Not an answer", "An answer names an ask and approves or denies it.");
    };
    let reviewer = Reviewer { names: vec![visitor.subject.clone()], shown: visitor.shown() };
    let outcome = match console.parts.gateway.guard.reviewers().answer_anywhere(id, approve, &reviewer).await {
        Ok(()) if approve => format!("approved: {id}"),
        Ok(()) => format!("denied: {id}"),
        Err(error) => format!("refused: {error}"),
    };
    console.done(&visitor, outcome, "/console/approvals")
}

struct RecordRow {
    seq: String,
    time: String,
    caller: String,
    provider: String,
    tool: String,
    event: String,
    verdict: String,
    details: String,
}

/// The filters as the form shows them (empty: not set).
#[derive(Default)]
struct FilterForm {
    caller: String,
    provider: String,
    tool: String,
    event: String,
    verdict: String,
    since: String,
    until: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct Audit {
    frame: Frame,
    intact: bool,
    verified: String,
    filter: FilterForm,
    records: Vec<RecordRow>,
    older: Option<String>,
}

/// `/console/audit`: the audit log, newest first, filtered, with its verification state.
pub(crate) async fn audit(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let visitor = match console.visitor(&headers, ConsoleRole::Admin, None).await {
        Ok(visitor) => visitor,
        Err(refusal) => return refusal,
    };
    let get = |name: &str| query.get(name).map(|v| v.trim().to_owned()).unwrap_or_default();
    let shown = FilterForm {
        caller: get("caller"),
        provider: get("provider"),
        tool: get("tool"),
        event: get("event"),
        verdict: get("verdict"),
        since: get("since"),
        until: get("until"),
    };
    let set = |v: &String| (!v.is_empty()).then(|| v.clone());
    let filter = Filter {
        caller: set(&shown.caller),
        provider: set(&shown.provider),
        tool: set(&shown.tool),
        event: set(&shown.event),
        verdict: set(&shown.verdict),
        since: set(&shown.since),
        until: set(&shown.until),
    };
    let before = query.get("before").and_then(|b| b.parse::<u64>().ok());
    let index = Arc::clone(&console.index);
    let read = tokio::task::spawn_blocking(move || {
        let mut index = index.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        index.refresh()?;
        let page = match index.page(&filter, before, PAGE_RECORDS) {
            Ok(page) => page,
            // A file rotated between the refresh and the read: once more.
            Err(_) => {
                index.refresh()?;
                index.page(&filter, before, PAGE_RECORDS)?
            }
        };
        Ok::<_, std::io::Error>((index.verified(), page))
    })
    .await;
    let (verified, page) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(error)) => {
            return message(StatusCode::INTERNAL_SERVER_ERROR, "The audit log cannot be read", error.to_string());
        }
        Err(error) => {
            return message(StatusCode::INTERNAL_SERVER_ERROR, "The audit log cannot be read", error.to_string());
        }
    };
    let (intact, verified) = match verified {
        Verified::Intact { records, anchor } => {
            (true, format!("{records} records verified from the first; the last is {anchor}"))
        }
        Verified::Broken(error) => (false, error.to_string()),
    };
    let older = page.older.map(|before| {
        let mut link = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in [
            ("caller", &shown.caller),
            ("provider", &shown.provider),
            ("tool", &shown.tool),
            ("event", &shown.event),
            ("verdict", &shown.verdict),
            ("since", &shown.since),
            ("until", &shown.until),
        ] {
            if !value.is_empty() {
                link.append_pair(name, value);
            }
        }
        link.append_pair("before", &before.to_string());
        format!("/console/audit?{}", link.finish())
    });
    let records = page.records.into_iter().map(row).collect();
    render(
        StatusCode::OK,
        &Audit { frame: visitor.frame("Audit log", "audit"), intact, verified, filter: shown, records, older },
    )
}

/// One record as a row: its common fields, and the rest as JSON.
fn row(mut record: Map<String, Value>) -> RecordRow {
    let mut take = |name: &str| match record.remove(name) {
        Some(Value::String(text)) => text,
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let (seq, time, caller, provider, tool, event) =
        (take("seq"), take("time"), take("caller"), take("provider"), take("tool"), take("event"));
    let mut verdict = take("verdict");
    if verdict.is_empty() {
        verdict = match record.get("approved").and_then(Value::as_bool) {
            Some(true) => "approved".into(),
            Some(false) => "refused".into(),
            None => String::new(),
        };
    }
    record.remove("prev");
    let mut details = Value::Object(record).to_string();
    if let Some((at, _)) = details.char_indices().nth(MAX_DETAILS_CHARS) {
        details.truncate(at);
        details.push_str("…[cut]");
    }
    RecordRow { seq, time, caller, provider, tool, event, verdict, details }
}
