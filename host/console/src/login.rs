//! Signing in and out: `/console/login` sends the browser to the authorization server
//! (code flow, PKCE S256, `state`, the gateway's resource indicator), `/console/callback`
//! redeems the code and opens a session for a reviewer or an admin, `/console/logout`
//! ends it.
//!
//! The sign-in under way is bound to the browser that started it by a random cookie
//! (`SameSite=Lax`, as the authorization server's redirect back is a cross-site
//! navigation; over http sent to the callback only). The session cookie is
//! `SameSite=Strict`, so the callback answers with a page that moves on to the console
//! from the console's own site, where the browser sends it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use oauth2::{AuthorizationCode, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse as _};
use subtle::ConstantTimeEq as _;
use wasmgate_policy::ConsoleRole;

use crate::Console;
use crate::cookies::{Cookie, Cookies};
use crate::html::{Frame, Message, message, render};
use crate::pages::cookie;
use crate::sessions::LOGIN_TTL;

/// The most characters of an authorization server's error shown.
const MAX_ERROR_CHARS: usize = 200;

impl Console {
    /// The console's cookies, as it is reached (over https or not).
    pub(crate) fn cookies(&self) -> Cookies {
        Cookies { secure: self.secure }
    }

    /// A `Set-Cookie` value giving `which` the value `value` for `max_age` seconds (0:
    /// removed), named and scoped for how the console is reached (see [`Cookies`]).
    fn cookie(&self, which: Cookie, value: &str, max_age: u64) -> Option<HeaderValue> {
        self.cookies().set(which, value, max_age)
    }
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// How long `caller`'s token is good for still, by its `exp` claim.
fn token_left(caller: &wasmgate_core::Caller) -> Option<Duration> {
    let exp = caller.claims.get("exp")?.as_u64()?;
    Some(Duration::from_secs(exp.saturating_sub(unix_now())))
}

/// `/console/login`: to the authorization server.
pub(crate) async fn login(State(console): State<Arc<Console>>) -> Response {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = console
        .oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", &console.parts.resource);
    for scope in &console.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state) = request.url();
    // The sign-in under way is the browser's to hold, sealed: nothing is kept here.
    let Some(sealed) = console.seal.seal(state.secret(), verifier.secret(), unix_now() + LOGIN_TTL.as_secs()) else {
        return message(StatusCode::SERVICE_UNAVAILABLE, "Cannot sign in", "The system gives no random numbers.");
    };
    let mut response = Redirect::to(url.as_str()).into_response();
    if let Some(cookie) = console.cookie(Cookie::Login, &sealed, LOGIN_TTL.as_secs()) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `/console/callback`: the code redeemed, the token checked, a session opened for a
/// reviewer or an admin.
pub(crate) async fn callback(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let again = "This sign-in is unknown, expired or from another browser: sign in again.";
    if let Some(error) = query.get("error") {
        // Anyone can send a browser here with any text: it is shown only for this
        // browser's own sign-in (its `state`), short, and as text.
        let sealed = cookie(&headers, console.cookies().name(Cookie::Login)).unwrap_or_default();
        let ours = query.get("state").is_some_and(|state| console.seal.open(sealed, state, unix_now()).is_some());
        if !ours {
            return message(StatusCode::BAD_REQUEST, "Not signed in", again);
        }
        let short = |text: &str| text.chars().take(MAX_ERROR_CHARS).collect::<String>();
        let detail = query.get("error_description").map(|d| format!(": {}", short(d))).unwrap_or_default();
        let said = format!("The authorization server said {}{detail}.", short(error));
        return message(StatusCode::FORBIDDEN, "Not signed in", said);
    }
    let (Some(code), Some(state)) = (query.get("code"), query.get("state")) else {
        return message(StatusCode::BAD_REQUEST, "Not signed in", again);
    };
    // The browser that started this sign-in holds its sealed cookie; no other does.
    let sealed = cookie(&headers, console.cookies().name(Cookie::Login)).unwrap_or_default();
    let Some(verifier) = console.seal.open(sealed, state, unix_now()) else {
        return message(StatusCode::BAD_REQUEST, "Not signed in", again);
    };
    let exchange = console
        .oauth
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(PkceCodeVerifier::new(verifier))
        .add_extra_param("resource", &console.parts.resource)
        .request_async(&console.http)
        .await;
    let token = match exchange {
        Ok(answer) => answer.access_token().secret().clone(),
        Err(error) => {
            tracing::warn!(error = %wasmgate_core::report(&error), "the console's token exchange failed");
            return message(
                StatusCode::BAD_GATEWAY,
                "Not signed in",
                "The authorization server did not give a token; the gateway's log says why.",
            );
        }
    };
    let caller = match console.parts.authenticator.authenticate(Some(&token)).await {
        Ok(caller) => caller,
        Err(failure) => {
            return message(
                StatusCode::FORBIDDEN,
                "Not signed in",
                format!("The token is not one this gateway takes: {failure}"),
            );
        }
    };
    let Some(role) = console.role(&caller.facts()) else {
        return message(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("{} is neither a reviewer nor an admin of this gateway (the policy's [console]).", caller.subject),
        );
    };
    // A session carries the token's rights: it ends when the token does, if sooner.
    let ttl = token_left(&caller).map_or(console.session_ttl, |left| left.min(console.session_ttl));
    let id = console.sessions.open(caller.subject.clone(), caller.facts(), ttl);
    tracing::info!(subject = %caller.subject, ?role, "signed in to the console");
    let page = Message {
        frame: Frame { title: "Signed in", ..Frame::default() },
        heading: "Signed in".into(),
        text: format!(
            "Signed in as {} ({}).",
            caller.subject,
            if role == ConsoleRole::Admin { "admin" } else { "reviewer" }
        ),
        link: Some(("/console".into(), "Go to the console".into())),
        refresh: Some("/console".into()),
    };
    let mut response = render(StatusCode::OK, &page);
    for cookie in [console.cookie(Cookie::Session, &id, ttl.as_secs()), console.cookie(Cookie::Login, "", 0)]
        .into_iter()
        .flatten()
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /console/logout`: the session ends, with its CSRF token only (another site
/// cannot sign a user out).
pub(crate) async fn logout(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(id) = cookie(&headers, console.cookies().name(Cookie::Session))
        && let Some(session) = console.sessions.get(id)
    {
        let sent = form.get("csrf").map(String::as_bytes).unwrap_or_default();
        if !bool::from(sent.ct_eq(session.csrf.as_bytes())) {
            return message(
                StatusCode::FORBIDDEN,
                "Forbidden",
                "The form carries no valid CSRF token: load the page again and resubmit.",
            );
        }
        console.sessions.close(id);
    }
    let mut response = message(StatusCode::OK, "Signed out", "You are signed out of the console.");
    if let Some(cookie) = console.cookie(Cookie::Session, "", 0) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}
