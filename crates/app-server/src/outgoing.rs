//! Everything the server sends goes through an [`Outgoing`]: typed responses,
//! notifications (minus those the client opted out of) and requests, whose answers it
//! routes back. The queue behind it is bounded in messages and in bytes: a client that
//! stops reading slows the server down (and its thread subscriptions catch up from the
//! event log) rather than filling memory.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::protocol::{
    ClientMethod, JsonRpcError, OutgoingError, OutgoingResponse, RequestId, ServerNotification,
    ServerRequest,
};

/// How many messages may wait to be written.
pub(crate) const OUTGOING_QUEUE: usize = 1024;
/// How many bytes of messages may wait to be written (one larger message waits alone).
pub(crate) const OUTGOING_BYTES: usize = 16 * 1024 * 1024;

/// A line of JSON waiting to be written (newline excluded), holding its share of the
/// byte budget until it is written.
pub(crate) struct QueuedLine {
    /// The message.
    pub(crate) line: String,
    _budget: OwnedSemaphorePermit,
}

/// The client's answer to a server request: its `result`, or the error it answered with.
pub(crate) type ClientReply = Result<Value, JsonRpcError>;

/// A handle on the outgoing queue; cheap to clone.
#[derive(Clone)]
pub(crate) struct Outgoing {
    tx: mpsc::Sender<QueuedLine>,
    /// The byte budget of the queue.
    budget: Arc<Semaphore>,
    /// Its size.
    budget_bytes: usize,
    shared: Arc<Shared>,
}

struct Shared {
    next_request_id: AtomicI64,
    /// Server requests waiting for the client's answer, by id.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<ClientReply>>>,
    /// Notification methods the client does not want.
    opted_out: OnceLock<HashSet<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Outgoing {
    /// A handle and the receiving end of its queue (for the writer).
    pub(crate) fn new(capacity: usize, bytes: usize) -> (Self, mpsc::Receiver<QueuedLine>) {
        let (tx, rx) = mpsc::channel(capacity);
        let budget_bytes = bytes.clamp(1, u32::MAX as usize);
        let budget = Arc::new(Semaphore::new(budget_bytes));
        let shared = Arc::new(Shared {
            next_request_id: AtomicI64::new(0),
            pending: Mutex::default(),
            opted_out: OnceLock::new(),
        });
        (
            Self {
                tx,
                budget,
                budget_bytes,
                shared,
            },
            rx,
        )
    }

    /// Answers request `id` of method `M` with its result.
    pub(crate) async fn respond<M: ClientMethod>(&self, id: RequestId, result: &M::Response) {
        match serde_json::to_string(&OutgoingResponse { id: &id, result }) {
            Ok(line) => self.send(line).await,
            Err(err) => {
                let error = JsonRpcError::internal(format!("cannot encode the result: {err}"));
                self.error(Some(id), error).await;
            }
        }
    }

    /// Answers request `id` (or an unreadable one) with an error.
    pub(crate) async fn error(&self, id: Option<RequestId>, error: JsonRpcError) {
        let envelope = OutgoingError {
            id: id.as_ref(),
            error: &error,
        };
        match serde_json::to_string(&envelope) {
            Ok(line) => self.send(line).await,
            Err(err) => tracing::error!("cannot encode an error: {err}"),
        }
    }

    /// Sends a notification, unless the client opted out of its method.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        let method = notification.method();
        if self
            .shared
            .opted_out
            .get()
            .is_some_and(|methods| methods.contains(method))
        {
            return;
        }
        match notification.to_json() {
            Ok(line) => self.send(line).await,
            Err(err) => tracing::error!(method, "cannot encode a notification: {err}"),
        }
    }

    /// Sends a request to the client; the receiver gets its answer (see [`Outgoing::resolve`]).
    pub(crate) async fn request(
        &self,
        request: ServerRequest,
    ) -> (RequestId, oneshot::Receiver<ClientReply>) {
        let id = RequestId::Integer(self.shared.next_request_id.fetch_add(1, Ordering::Relaxed));
        let (reply_tx, reply_rx) = oneshot::channel();
        match request.to_json(&id) {
            Ok(line) => {
                // Registered first: the answer may come back before `send` returns.
                lock(&self.shared.pending).insert(id.clone(), reply_tx);
                self.send(line).await;
            }
            Err(err) => {
                let _ = reply_tx.send(Err(JsonRpcError::internal(format!(
                    "cannot encode the request: {err}"
                ))));
            }
        }
        (id, reply_rx)
    }

    /// Hands the client's answer to request `id` to whoever waits; false when nobody does
    /// (unknown id, or the question was withdrawn).
    pub(crate) fn resolve(&self, id: &RequestId, reply: ClientReply) -> bool {
        let waiting = lock(&self.shared.pending).remove(id);
        waiting.is_some_and(|tx| tx.send(reply).is_ok())
    }

    /// Stops waiting for the answer to request `id`; a late answer is then ignored.
    pub(crate) fn withdraw(&self, id: &RequestId) {
        lock(&self.shared.pending).remove(id);
    }

    /// Drops every later notification whose method is in `methods`.
    pub(crate) fn opt_out(&self, methods: Vec<String>) {
        let _ = self.shared.opted_out.set(methods.into_iter().collect());
    }

    async fn send(&self, line: String) {
        let wanted = line.len().clamp(1, self.budget_bytes);
        let Ok(wanted) = u32::try_from(wanted) else {
            return;
        };
        // Waits while the queue holds too many bytes; fails only if the budget is closed.
        let Ok(budget) = self.budget.clone().acquire_many_owned(wanted).await else {
            return;
        };
        let queued = QueuedLine {
            line,
            _budget: budget,
        };
        // Fails only once the writer has stopped (stdout closed): nothing left to tell.
        let _ = self.tx.send(queued).await;
    }
}
