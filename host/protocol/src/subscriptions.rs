//! `subscriptions/listen` (2026-07-28): the one way a stateless-era client hears about
//! changes it did not ask about in a request.
//!
//! The 2026-07-28 revision removed the handshake era's standing channels (the HTTP GET
//! stream, notifications written to stdout at will). A client that wants change
//! notifications sends a long-lived `subscriptions/listen` request with a filter of the
//! kinds it opts in to (`toolsListChanged`, ...); the server answers first with
//! `notifications/subscriptions/acknowledged` (the subset it agreed to honor), then with
//! the notifications themselves, each stamped with
//! `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id. The
//! request stays open until the client cancels it (closing the HTTP response stream, or
//! `notifications/cancelled` on stdio) or the server ends it (a `complete` result, or on
//! stdio a server-sent `notifications/cancelled`).
//!
//! This module holds the wire vocabulary: the filter, its strict parser, the
//! acknowledgment parser, and the `subscriptionId` reader. The request builder is
//! [`ClientContext::subscriptions_listen`](crate::ClientContext::subscriptions_listen),
//! next to the other builders, since it needs the stateless `_meta` stamp.

use serde_json::{Map, Value};

use crate::fields::{Object, as_object, join, opt_bool, opt_object, req_array, required, wrong_type};
use crate::{Id, ProtocolError};

/// The long-lived request's method.
pub const LISTEN: &str = "subscriptions/listen";
/// The server's first message on a subscription.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `_meta` key on every message of a subscription stream: the listen request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The most URIs a filter may name in `resourceSubscriptions`: a server follows far
/// fewer, and each one named may cost it a request upstream.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// `SubscriptionFilter`: the notification kinds a client opts in to (all opt-in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_subscriptions: Vec<String>,
}

impl SubscriptionFilter {
    /// Tool-list changes only.
    #[must_use]
    pub fn tools() -> Self {
        Self { tools_list_changed: true, ..Self::default() }
    }

    /// As JSON. Kinds not asked for are omitted (the schema's "omitting a field is
    /// equivalent to not subscribing"), so `{}` asks for nothing.
    #[must_use]
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        for (key, wanted) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if wanted {
                obj.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            let uris = self.resource_subscriptions.iter().cloned().map(Value::String).collect();
            obj.insert("resourceSubscriptions".into(), Value::Array(uris));
        }
        Value::Object(obj)
    }

    /// Reads a filter at `at`: booleans must be booleans, URIs strings, at most
    /// [`MAX_RESOURCE_SUBSCRIPTIONS`] of them; unknown keys are ignored (later revisions
    /// may add kinds).
    ///
    /// # Errors
    ///
    /// [`WrongType`](ProtocolError::WrongType) for a member of the wrong type;
    /// [`TooMany`](ProtocolError::TooMany) for too many URIs.
    pub fn parse(value: &Value, at: &str) -> Result<Self, ProtocolError> {
        let obj = as_object(value, at)?;
        let mut uris = Vec::new();
        if obj.contains_key("resourceSubscriptions") {
            let listed = req_array(obj, at, "resourceSubscriptions")?;
            if listed.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                let (at, count) = (format!("{at}.resourceSubscriptions"), listed.len());
                return Err(ProtocolError::TooMany { at, count, limit: MAX_RESOURCE_SUBSCRIPTIONS });
            }
            for (n, uri) in listed.iter().enumerate() {
                let Some(uri) = uri.as_str() else {
                    return Err(wrong_type(format!("{at}.resourceSubscriptions[{n}]"), "a string"));
                };
                uris.push(uri.to_owned());
            }
        }
        Ok(Self {
            tools_list_changed: opt_bool(obj, at, "toolsListChanged")?.unwrap_or(false),
            prompts_list_changed: opt_bool(obj, at, "promptsListChanged")?.unwrap_or(false),
            resources_list_changed: opt_bool(obj, at, "resourcesListChanged")?.unwrap_or(false),
            resource_subscriptions: uris,
        })
    }
}

/// `notifications/subscriptions/acknowledged`: which subscription, and what the server
/// agreed to send on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acknowledged {
    /// The listen request's id.
    pub subscription_id: Id,
    /// The honored subset of the requested filter.
    pub notifications: SubscriptionFilter,
}

/// Reads the params of `notifications/subscriptions/acknowledged`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without `_meta`'s subscription id or
/// `notifications`; the [`Id`] and [`SubscriptionFilter::parse`] errors.
pub fn parse_acknowledged(params: &Object) -> Result<Acknowledged, ProtocolError> {
    let subscription_id = subscription_id(params)?
        .ok_or_else(|| ProtocolError::MissingField { at: format!("params._meta.{META_SUBSCRIPTION_ID}") })?;
    let notifications =
        SubscriptionFilter::parse(required(params, "params", "notifications")?, "params.notifications")?;
    Ok(Acknowledged { subscription_id, notifications })
}

/// The subscription a notification's (or a listen result's) params belong to:
/// `_meta["io.modelcontextprotocol/subscriptionId"]`, or `None` when absent (a
/// notification not delivered on a subscription stream).
///
/// # Errors
///
/// [`WrongType`](ProtocolError::WrongType) if `_meta` is not an object,
/// [`BadId`](ProtocolError::BadId) if the id is not a string or an integer.
pub fn subscription_id(params: &Object) -> Result<Option<Id>, ProtocolError> {
    let Some(meta) = opt_object(params, "params", "_meta")? else { return Ok(None) };
    meta.get(META_SUBSCRIPTION_ID).map(Id::from_value).transpose()
}

/// Whether `capabilities` (a `ServerCapabilities` object) declares `listChanged: true`
/// for `primitive` (`"tools"`, `"prompts"`, `"resources"`): the server's promise to
/// send that list's change notifications. Anything else, including a malformed
/// capability, is no promise.
#[must_use]
pub fn declares_list_changed(capabilities: &Object, primitive: &str) -> bool {
    let at = join("capabilities", primitive);
    capabilities.get(primitive).is_some_and(|cap| {
        cap.as_object().is_some_and(|cap| opt_bool(cap, &at, "listChanged").ok().flatten() == Some(true))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn obj(value: Value) -> Object {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_filter_omits_the_kinds_it_does_not_ask_for_and_reads_back_the_same() {
        assert_eq!(SubscriptionFilter::tools().to_value(), json!({"toolsListChanged": true}));
        assert_eq!(SubscriptionFilter::default().to_value(), json!({}));
        let full = SubscriptionFilter {
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: vec!["file:///a".into()],
            ..SubscriptionFilter::tools()
        };
        assert_eq!(SubscriptionFilter::parse(&full.to_value(), "f").unwrap(), full);
    }

    #[test]
    fn a_filter_member_of_the_wrong_type_is_refused_and_unknown_kinds_are_ignored() {
        let parsed = SubscriptionFilter::parse(&json!({"toolsListChanged": true, "futureKind": 1}), "f").unwrap();
        assert_eq!(parsed, SubscriptionFilter::tools());
        assert!(SubscriptionFilter::parse(&json!({"toolsListChanged": "yes"}), "f").is_err());
        assert!(SubscriptionFilter::parse(&json!({"resourceSubscriptions": [1]}), "f").is_err());
        assert!(SubscriptionFilter::parse(&json!({"toolsListChanged": null}), "f").is_err());
    }

    #[test]
    fn a_filter_naming_too_many_resources_is_refused() {
        let uris = |n: usize| json!({"resourceSubscriptions": (0..n).map(|i| format!("x://{i}")).collect::<Vec<_>>()});
        let most = SubscriptionFilter::parse(&uris(MAX_RESOURCE_SUBSCRIPTIONS), "f").unwrap();
        assert_eq!(most.resource_subscriptions.len(), MAX_RESOURCE_SUBSCRIPTIONS);
        assert_eq!(
            SubscriptionFilter::parse(&uris(MAX_RESOURCE_SUBSCRIPTIONS + 1), "f"),
            Err(ProtocolError::TooMany {
                at: "f.resourceSubscriptions".into(),
                count: MAX_RESOURCE_SUBSCRIPTIONS + 1,
                limit: MAX_RESOURCE_SUBSCRIPTIONS
            })
        );
    }

    #[test]
    fn an_acknowledgment_needs_its_subscription_id_and_filter() {
        let ack = obj(json!({"_meta": {META_SUBSCRIPTION_ID: 7}, "notifications": {"toolsListChanged": true}}));
        let parsed = parse_acknowledged(&ack).unwrap();
        assert_eq!(parsed, Acknowledged { subscription_id: Id::Int(7), notifications: SubscriptionFilter::tools() });
        assert!(parse_acknowledged(&obj(json!({"notifications": {}}))).is_err());
        assert!(parse_acknowledged(&obj(json!({"_meta": {META_SUBSCRIPTION_ID: "s"}}))).is_err());
        assert!(parse_acknowledged(&obj(json!({"_meta": {META_SUBSCRIPTION_ID: 1.5}, "notifications": {}}))).is_err());
    }

    #[test]
    fn the_subscription_id_is_read_from_meta_and_absent_without_it() {
        assert_eq!(subscription_id(&obj(json!({"_meta": {META_SUBSCRIPTION_ID: "l-1"}}))), Ok(Some("l-1".into())));
        assert_eq!(subscription_id(&obj(json!({"_meta": {}}))), Ok(None));
        assert_eq!(subscription_id(&Map::new()), Ok(None));
        assert!(subscription_id(&obj(json!({"_meta": []}))).is_err());
    }

    #[test]
    fn only_a_literal_true_list_changed_is_a_promise() {
        let caps = obj(json!({"tools": {"listChanged": true}, "prompts": {"listChanged": "true"}, "resources": {}}));
        assert!(declares_list_changed(&caps, "tools"));
        assert!(!declares_list_changed(&caps, "prompts"));
        assert!(!declares_list_changed(&caps, "resources"));
        assert!(!declares_list_changed(&obj(json!({"tools": true})), "tools"));
    }
}
