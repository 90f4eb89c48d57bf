//! [`Pending`]: an append that has been queued, and waiting for it to be durable, either blocking
//! ([`Pending::wait`]) or as a `Future` (no runtime needed: the writer thread wakes the task).

use crate::error::AuditError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Debug, Default)]
struct Slot {
    result: Option<Result<u64, AuditError>>,
    waker: Option<Waker>,
}

/// Where the writer thread puts a submission's outcome.
#[derive(Debug, Default)]
pub(crate) struct Completion {
    slot: Mutex<Slot>,
    ready: Condvar,
}

impl Completion {
    pub fn complete(&self, result: Result<u64, AuditError>) {
        let waker = {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            slot.result = Some(result);
            slot.waker.take()
        };
        self.ready.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A queued append. Resolves to the `seq` of its last record once it is as durable as the log's
/// [`crate::Durability`] promises, or to the error that refused it.
#[derive(Debug)]
#[must_use = "a call must not start before its record is durable: wait for it"]
pub struct Pending {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Ready(Option<Result<u64, AuditError>>),
    Waiting(Arc<Completion>),
}

impl Pending {
    pub(crate) fn ready(result: Result<u64, AuditError>) -> Self {
        Pending { inner: Inner::Ready(Some(result)) }
    }

    pub(crate) fn waiting(completion: Arc<Completion>) -> Self {
        Pending { inner: Inner::Waiting(completion) }
    }

    /// Blocks until the records are durable (or refused).
    pub fn wait(self) -> Result<u64, AuditError> {
        match self.inner {
            Inner::Ready(r) => r.unwrap_or(Ok(0)),
            Inner::Waiting(c) => {
                let mut slot = c.slot.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(r) = slot.result.take() {
                        return r;
                    }
                    slot = c.ready.wait(slot).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
}

impl Future for Pending {
    type Output = Result<u64, AuditError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().inner {
            Inner::Ready(r) => Poll::Ready(r.take().unwrap_or(Ok(0))),
            Inner::Waiting(c) => {
                let mut slot = c.slot.lock().unwrap_or_else(|e| e.into_inner());
                match slot.result.take() {
                    Some(r) => Poll::Ready(r),
                    None => {
                        slot.waker = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            }
        }
    }
}
