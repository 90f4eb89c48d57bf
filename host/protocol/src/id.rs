//! Request ids.
//!
//! MCP's `RequestId` is a string or a number; this crate narrows "number" to integers in
//! i64 range and refuses everything else (see [`Id::from_value`]). The same type serves
//! for progress tokens and `notifications/cancelled`'s `requestId`. It is `Hash + Eq` so
//! the gateway can key its table of in-flight requests by it.

use std::fmt;

use serde_json::Value;

use crate::ProtocolError;
use crate::fields::json_type;

/// A request id: a string or an integer (MCP `RequestId`, also used for progress tokens).
///
/// `Id::Int(1)` and `Id::String("1".into())` are different ids, as in JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// A string id.
    String(String),
    /// An integer id.
    Int(i64),
}

impl Id {
    /// Reads an id, accepting exactly a string or an integer that fits in i64.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::BadId`] naming what was found instead.
    pub fn from_value(value: &Value) -> Result<Self, ProtocolError> {
        match value {
            Value::String(s) => Ok(Self::String(s.clone())),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Ok(Self::Int(i)),
                None if n.is_u64() => {
                    Err(ProtocolError::BadId(format!("integer {n} does not fit in a signed 64-bit id")))
                }
                None => Err(ProtocolError::BadId(format!("{n} is not an integer"))),
            },
            Value::Null => Err(ProtocolError::BadId("null is not allowed here".into())),
            other => Err(ProtocolError::BadId(format!("expected a string or an integer, got {}", json_type(other)))),
        }
    }

    /// The id as JSON.
    #[must_use]
    pub fn to_value(&self) -> Value {
        match self {
            Self::String(s) => Value::String(s.clone()),
            Self::Int(i) => Value::from(*i),
        }
    }
}

/// Shows the id as JSON, so `"1"` (quoted, a string) and `1` stay distinguishable in logs.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::String(s) => write!(f, "{}", Value::String(s.clone())),
            Self::Int(i) => write!(f, "{i}"),
        }
    }
}

impl From<i64> for Id {
    fn from(i: i64) -> Self {
        Self::Int(i)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}
