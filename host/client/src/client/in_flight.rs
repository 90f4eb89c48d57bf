//! [`CallsInFlight`]: the calls in flight, each with its own input handler and log
//! receiver, for what a server sends that names no call.

use std::fmt;
use std::sync::Arc;

use super::config::LogFn;
use super::input::InputHandler;

/// The calls in flight, each with its own input handler and log receiver if it has
/// them. A handshake-era server's request for input, and any server's log message,
/// names no call; it belongs to a call only when that call is the one in flight (two
/// calls' questions cannot be told apart, and a question must never reach the person
/// behind another call).
#[derive(Debug, Default)]
pub(crate) struct CallsInFlight {
    calls: std::sync::Mutex<Calls>,
}

/// The last handle given out, and each call's handle, handler and log receiver.
#[derive(Default)]
struct Calls {
    last: u64,
    open: Vec<(u64, Option<Handler>, Option<LogFn>)>,
}

type Handler = Arc<dyn InputHandler>;

impl fmt::Debug for Calls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Calls").field("last", &self.last).field("open", &self.open.len()).finish()
    }
}

impl CallsInFlight {
    pub(crate) fn register(&self, handler: Option<Handler>, log: Option<LogFn>) -> u64 {
        let mut calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.last += 1;
        let handle = calls.last;
        calls.open.push((handle, handler, log));
        handle
    }

    pub(crate) fn unregister(&self, handle: u64) {
        let mut calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.open.retain(|(h, ..)| *h != handle);
    }

    /// The handler of the one call in flight, if there is exactly one and it has one.
    pub(crate) fn only(&self) -> Option<Handler> {
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match calls.open.as_slice() {
            [(_, handler, _)] => handler.clone(),
            _ => None,
        }
    }

    /// The log receiver of the one call in flight, if there is exactly one and it has one.
    pub(crate) fn only_log(&self) -> Option<LogFn> {
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match calls.open.as_slice() {
            [(_, _, log)] => log.clone(),
            _ => None,
        }
    }
}
