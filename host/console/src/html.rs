//! The templates, and what every response of the console carries.

use askama::Template;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The largest form body read.
pub(crate) const MAX_FORM_BYTES: usize = 16 * 1024;

/// The policy every console response carries: nothing runs, nothing loads but the
/// console's own stylesheet, forms post to the console only, and no other site frames it.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                              frame-ancestors 'none'; base-uri 'none'";

/// Adds the security headers to a console response.
pub(crate) async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::HeaderName::from_static("cross-origin-opener-policy"), "same-origin");
    response
}

/// The stylesheet.
pub(crate) async fn style() -> Response {
    let mut response = include_str!("console.css").into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    response
}

/// What every page shows around its content: who is signed in, the navigation, the
/// sign-out form and the last action's outcome.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    /// The page's title.
    pub title: &'static str,
    /// Which navigation entry is this page.
    pub here: &'static str,
    /// Who is signed in (empty on pages for nobody).
    pub subject: String,
    /// `reviewer` or `admin`.
    pub role: &'static str,
    /// Whether the audit log is theirs to read.
    pub admin: bool,
    /// The session's CSRF token (none for a bearer token).
    pub csrf: Option<String>,
    /// What the last action did.
    pub flash: Option<String>,
}

/// A page with a message only: refusals, sign-in outcomes.
#[derive(Template)]
#[template(path = "message.html")]
pub(crate) struct Message {
    pub frame: Frame,
    pub heading: String,
    pub text: String,
    /// A link to go on with (href, text).
    pub link: Option<(String, String)>,
    /// Where the browser goes at once (same-site), if anywhere.
    pub refresh: Option<String>,
}

/// `template` rendered, with `status`.
pub(crate) fn render(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(page) => {
            let mut response = (status, page).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            response
        }
        Err(error) => {
            tracing::error!(%error, "a console page cannot be rendered");
            (StatusCode::INTERNAL_SERVER_ERROR, "the page cannot be rendered; the gateway's log says why")
                .into_response()
        }
    }
}

/// A page saying `text` under `heading`, with `status`.
pub(crate) fn message(status: StatusCode, heading: &str, text: impl Into<String>) -> Response {
    let link = Some(("/console/login".to_owned(), "Sign in".to_owned()));
    let page = Message {
        frame: Frame { title: "wasmgate console", ..Frame::default() },
        heading: heading.to_owned(),
        text: text.into(),
        link,
        refresh: None,
    };
    render(status, &page)
}

/// 404 for a console path that is no page.
pub(crate) async fn not_found() -> Response {
    message(StatusCode::NOT_FOUND, "Not found", "The console has no such page.")
}

/// `value` as indented JSON, for a `<pre>` (escaped by the template).
pub(crate) fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
