//! OAuth 2.1 for HTTP providers, as the MCP authorization spec describes it for both
//! protocol revisions.
//!
//! An [`Authorizer`] belongs to one HTTP provider. The transport asks it for the current
//! access token before each request and tells it of each `401`/`403` with the
//! `WWW-Authenticate` challenge; the authorizer then:
//!
//! 1. finds the resource's metadata (the challenge's `resource_metadata`, else the
//!    well-known URLs, RFC 9728) and checks that it names this endpoint;
//! 2. finds its authorization server's metadata (RFC 8414 with path insertion, then
//!    OpenID Connect discovery) and checks the issuer it names;
//! 3. picks the scope: configured, else the challenge's, else `scopes_supported`, else
//!    none; a `403 insufficient_scope` asks again with the union (step-up; the transport
//!    bounds the attempts);
//! 4. identifies itself: a pre-registered client (secret or private key), a Client ID
//!    Metadata Document URL where the server supports them, or dynamic registration
//!    (RFC 7591), kept with the tokens;
//! 5. gets a token: client credentials for machines, or the authorization code with
//!    PKCE `S256` through a [`UserAgent`] (state and RFC 9207 `iss` checked), with the
//!    resource indicator (RFC 8707) on every request; refreshes before expiry;
//! 6. keeps the tokens in a [`TokenStore`] private to the user.
//!
//! Without a user agent (the gateway serving), an authorization code provider with no
//! usable token fails with [`AuthError::LoginRequired`], which names the command to run.
//! Tokens never appear in `Debug`, logs or errors, and never go to a non-loopback host
//! over plain `http`.
//!
//! # Layout
//!
//! * `authorizer`: [`Authorizer`] and its configuration ([`OAuthConfig`], [`Grant`],
//!   [`ClientIdentity`], [`TokenAuth`], [`PrivateKey`]), what it tells the transport
//!   ([`Retry`]) and reports ([`LoginStatus`]);
//! * `challenge`: a `WWW-Authenticate` [`Challenge`];
//! * `metadata`: protected-resource and authorization-server metadata, found and checked;
//! * `exchange`: registration, the authorization code with PKCE, client credentials,
//!   refresh;
//! * `agent`: the [`UserAgent`] that takes a person through a login
//!   ([`LoopbackBrowser`], [`FollowRedirect`]);
//! * `store`: the [`TokenStore`] of [`Stored`] tokens, and [`read_private`], a file only
//!   its owner may read;
//! * `secret`: [`SecretSource`], a secret's value (itself or an environment variable);
//! * `http`: the HTTP side: no redirect, no proxy from the environment, bounded reads,
//!   secure URLs only (`wasmgate-egress`'s rule);
//! * `error`: [`AuthError`].

mod agent;
mod authorizer;
mod challenge;
mod error;
mod exchange;
mod http;
mod metadata;
mod secret;
mod store;

pub use agent::{FollowRedirect, LoopbackBrowser, UserAgent};
pub use authorizer::{Authorizer, ClientIdentity, Grant, LoginStatus, OAuthConfig, PrivateKey, Retry, TokenAuth};
pub use challenge::Challenge;
pub use error::AuthError;
pub use http::AuthHttp;
pub use secret::{SecretSource, UnsetVariable};
pub use store::{PrivateFileError, Stored, TokenStore, read_private};
