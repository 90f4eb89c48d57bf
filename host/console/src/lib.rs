//! The web console of `wasmgate serve --http`, at `/console`: the providers and their
//! state, the tools and their verdicts, what waits for review (with its diff) and for
//! approval (with its arguments, redacted), and the audit log with filters and its
//! verification state, for the callers the policy's `[console]` names.
//!
//! * Who: a reviewer decides reviews and answers asks; an admin does that and reads the
//!   audit log. Anyone else gets 403 on every page and action.
//! * Sign-in: the authorization code flow with PKCE (S256) at the authorization server
//!   that issues the gateway's tokens; the token it gives is checked as `/mcp` checks
//!   one. The session is a random id in an `HttpOnly`, `SameSite=Strict` cookie (behind
//!   https `Secure` and `__Host-` named, see `cookies`) that expires; signing out ends
//!   it. A page also takes a bearer token, as `/mcp` does; an action takes a session
//!   only.
//! * Every form carries the session's CSRF token; a post without it is refused.
//! * Every response carries a strict Content-Security-Policy (`default-src 'none'`, the
//!   stylesheet from the console itself, `frame-ancestors 'none'`), `nosniff`,
//!   `no-referrer` and `no-store`. Pages are rendered on the server from templates that
//!   escape every value: a provider's text is shown as text.
//!
//! # Layout
//!
//! * `settings`: [`Console::new`] checks `[serve.console]` and builds the sign-in
//!   client.
//! * `sessions`: sign-ins under way and sessions, bounded and expiring.
//! * `login`: `/console/login`, `/console/callback`, `/console/logout`.
//! * `cookies`: the session and sign-in cookies, `__Host-` named behind https.
//! * `pages`: the pages and the actions, and who may see them.
//! * `html`: the templates and the headers every response carries.

mod cookies;
mod html;
mod login;
mod pages;
mod sessions;
mod settings;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmgate_audit::Index;
use wasmgate_gateway::{Gateway, GatewayBackend};
use wasmgate_oauth::AuthHttp;
use wasmgate_server::Authenticator;

pub use settings::{ConsoleError, MAX_SESSION_MINUTES};

/// Where the console is served.
pub const PATH: &str = "/console";

/// What the console shows and acts on.
pub struct Parts {
    /// The running gateway.
    pub gateway: Arc<Gateway>,
    /// Its server face (told when a decision changes the tools).
    pub backend: Arc<GatewayBackend>,
    /// The configuration file (decisions read the lock beside it).
    pub config_path: PathBuf,
    /// What checks the tokens `/mcp` takes, and so the console's.
    pub authenticator: Arc<dyn Authenticator>,
    /// The gateway's resource URL (the tokens' audience), asked for at sign-in.
    pub resource: String,
    /// The audit log's chain key, when it is keyed.
    pub audit_key: Option<wasmgate_audit::ChainKey>,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("config_path", &self.config_path)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// The console; [`Console::router`] serves it.
pub struct Console {
    parts: Parts,
    oauth: settings::OAuthClient,
    http: AuthHttp,
    /// Whether the console is reached over https (its cookies are then `Secure`).
    secure: bool,
    session_ttl: Duration,
    scopes: Vec<String>,
    sessions: sessions::Sessions,
    /// Seals the sign-ins under way, which browsers hold.
    seal: sessions::Seal,
    index: Arc<Mutex<Index>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("secure", &self.secure).finish_non_exhaustive()
    }
}

impl Console {
    /// The console's routes, for [`wasmgate_server::HttpConfig::routes`].
    pub fn router(self: Arc<Self>) -> axum::Router {
        use axum::routing::{get, post};
        axum::Router::new()
            .route(PATH, get(pages::overview))
            .route("/console/reviews", get(pages::reviews))
            .route("/console/reviews/decide", post(pages::decide))
            .route("/console/approvals", get(pages::approvals))
            .route("/console/approvals/answer", post(pages::answer))
            .route("/console/audit", get(pages::audit))
            .route("/console/style.css", get(html::style))
            .route("/console/login", get(login::login))
            .route("/console/callback", get(login::callback))
            .route("/console/logout", post(login::logout))
            .route("/console/{*rest}", axum::routing::any(html::not_found))
            .layer(axum::extract::DefaultBodyLimit::max(html::MAX_FORM_BYTES))
            .layer(axum::middleware::map_response(html::secure))
            .with_state(self)
    }
}
