//! The webhook that announces each call waiting for a reviewer (`[serve.approvals]
//! webhook`), so the people who approve hear of it without watching `wasmgate
//! approvals`.
//!
//! Each announcement is one `POST` of a JSON body, `{"event": "approval_pending",
//! "ask": {...}}` (the ask as `wasmgate approvals` shows it: arguments redacted), with
//! `X-Wasmgate-Timestamp` (Unix seconds) and `X-Wasmgate-Signature: sha256=HEX`, the
//! HMAC-SHA256 under the shared secret of the timestamp, a `.`, and the body. A relay
//! checks the signature and refuses an old timestamp, so a captured announcement cannot
//! be replayed later.
//!
//! The request obeys the egress rules of the gateway's own requests
//! (`wasmgate_egress::Reach`): the URL is configured, so it must be `https`, or `http`
//! to a loopback host, and the address connected to is the one the rules checked. It
//! is sent in the background, at most [`MAX_IN_FLIGHT`] at once (more are dropped and
//! logged), with no redirect followed and a 10 s timeout; a failure is logged, and the
//! call waits on all the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use url::Url;
use wasmgate_egress::Reach;
use wasmgate_guard::PendingAsk;

/// The most announcements sent at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// The shortest secret taken, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// How long one announcement may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the webhook cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Not a URL, or one the egress rules refuse.
    #[error("[serve.approvals] webhook {url:?}: {why}")]
    Url {
        /// As written.
        url: String,
        /// Why.
        why: String,
    },
    /// The secret is too short to sign with.
    #[error(
        "[serve.approvals] secret_env: the secret is {0} bytes; at least {MIN_SECRET_BYTES} are needed (make one with \
         `openssl rand -hex 32`)"
    )]
    ShortSecret(usize),
    /// The HTTP client cannot be built.
    #[error("[serve.approvals] webhook: HTTP client: {0}")]
    Client(String),
}

/// Announces pending asks; see the module docs.
#[derive(Debug, Clone)]
pub struct Webhook {
    url: Url,
    secret: Arc<[u8]>,
    client: reqwest::Client,
    in_flight: Arc<AtomicUsize>,
}

impl Webhook {
    /// A webhook posting to `url`, signing with `secret`.
    ///
    /// # Errors
    ///
    /// [`WebhookError`]: `url` is not one the egress rules let the gateway send to, or
    /// `secret` is shorter than [`MIN_SECRET_BYTES`].
    pub fn new(url: &str, secret: &[u8]) -> Result<Self, WebhookError> {
        let refused = |why: String| WebhookError::Url { url: url.to_owned(), why };
        let parsed = Url::parse(url).map_err(|e| refused(e.to_string()))?;
        if secret.len() < MIN_SECRET_BYTES {
            return Err(WebhookError::ShortSecret(secret.len()));
        }
        let reach = Reach::new(Vec::new());
        reach.configure(&parsed);
        reach.check(&parsed).map_err(|e| refused(e.to_string()))?;
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(reach))
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| WebhookError::Client(wasmgate_core::report(&e)))?;
        Ok(Self { url: parsed, secret: secret.into(), client, in_flight: Arc::default() })
    }

    /// The headers and body announcing `ask` at `timestamp` (Unix seconds).
    #[must_use]
    pub fn signed(&self, ask: &PendingAsk, timestamp: u64) -> (String, String) {
        let body = serde_json::json!({"event": "approval_pending", "ask": ask}).to_string();
        (signature(&self.secret, timestamp, &body), body)
    }

    /// Sends the announcement of `ask` in the background.
    pub fn announce(&self, ask: &PendingAsk) {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(ask = %ask.id, "{MAX_IN_FLIGHT} webhook announcements are under way; this one is dropped");
            return;
        }
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let (signature, body) = self.signed(ask, timestamp);
        let (webhook, id) = (self.clone(), ask.id.clone());
        tokio::spawn(async move {
            let sent = webhook
                .client
                .post(webhook.url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header("X-Wasmgate-Timestamp", timestamp.to_string())
                .header("X-Wasmgate-Signature", format!("sha256={signature}"))
                .body(body)
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {}
                Ok(response) => {
                    tracing::warn!(ask = %id, status = response.status().as_u16(), "the webhook refused an announcement");
                }
                Err(e) => {
                    tracing::warn!(ask = %id, error = %wasmgate_core::report(&e), "the webhook cannot be reached")
                }
            }
            webhook.in_flight.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// The hex HMAC-SHA256 under `secret` of `timestamp`, `.`, and `body`.
#[must_use]
pub fn signature(secret: &[u8], timestamp: u64, body: &str) -> String {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else { return String::new() };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn ask() -> PendingAsk {
        PendingAsk {
            id: "c-1".into(),
            call: "c-1".into(),
            caller: Some("bob".into()),
            provider: "pay".into(),
            tool: "send_money".into(),
            arguments: serde_json::json!({"to": "[redacted]"}),
            reason: "the policy asks".into(),
            subject: "call".into(),
            asked_ms: 1,
            deadline_ms: 2,
        }
    }

    #[test]
    fn a_webhook_is_refused_where_the_egress_rules_or_its_secret_say_so() {
        let refused = |url: &str, secret: &[u8]| Webhook::new(url, secret).unwrap_err().to_string();
        assert!(refused("http://relay.example/hook", SECRET).contains("not https"), "plain http off loopback");
        assert!(refused("not a url", SECRET).contains("not a url"));
        assert!(refused("https://relay.example/hook", b"short").contains("at least 32"));
        assert!(Webhook::new("https://relay.example/hook", SECRET).is_ok());
        assert!(Webhook::new("http://127.0.0.1:9/hook", SECRET).is_ok(), "loopback may be plain http");
    }

    #[test]
    fn the_signature_covers_the_timestamp_and_the_body() {
        let webhook = Webhook::new("https://relay.example/hook", SECRET).unwrap();
        let (signature, body) = webhook.signed(&ask(), 1_700_000_000);
        let sent: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((sent["event"].as_str(), sent["ask"]["id"].as_str()), (Some("approval_pending"), Some("c-1")));
        assert_eq!(signature.len(), 64);
        assert_ne!(signature, webhook.signed(&ask(), 1_700_000_001).0, "another time, another signature");
        let mut other = ask();
        other.tool = "balance".into();
        assert_ne!(signature, webhook.signed(&other, 1_700_000_000).0, "another body, another signature");
        assert_ne!(signature, super::signature(b"another secret of at least 32 bytes..", 1_700_000_000, &body));
    }

    #[tokio::test]
    async fn an_unreachable_webhook_is_logged_and_frees_its_place() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let webhook = Webhook::new(&format!("http://127.0.0.1:{port}/hook"), SECRET).unwrap();
        webhook.announce(&ask());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while webhook.in_flight.load(Ordering::Acquire) != 0 {
            assert!(std::time::Instant::now() < deadline, "the announcement never ended");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // With MAX_IN_FLIGHT under way, another is dropped, never queued.
        webhook.in_flight.store(MAX_IN_FLIGHT, Ordering::Release);
        webhook.announce(&ask());
        assert_eq!(webhook.in_flight.load(Ordering::Acquire), MAX_IN_FLIGHT);
    }
}
