//! Everything the server sends goes through an [`Outgoing`]: typed responses,
//! notifications (minus those the client opted out of) and requests, whose answers it
//! routes back — a typed face on the connection's JSON-RPC queue
//! ([`deputy_jsonrpc::outgoing::Outgoing`]), which is bounded in messages and in bytes:
//! a client that stops reading slows the server down (and its thread subscriptions
//! catch up from the event log) rather than filling memory.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use deputy_jsonrpc::outgoing::{Outgoing as Queue, Reply};
use deputy_jsonrpc::{Dialect, OutputQueue};
use tokio::sync::oneshot;

use crate::protocol::{ClientMethod, JsonRpcError, RequestId, ServerNotification, ServerRequest};

/// The client's answer to a server request: its `result`, or the error it answered with.
pub(crate) type ClientReply = Reply;

/// A handle on the outgoing queue; cheap to clone.
#[derive(Clone)]
pub(crate) struct Outgoing {
    queue: Queue,
    /// Notification methods the client does not want.
    opted_out: Arc<OnceLock<HashSet<String>>>,
}

impl Outgoing {
    /// Sends through `output`, in the app-server's dialect (no `"jsonrpc"`).
    pub(crate) fn new(output: OutputQueue) -> Self {
        Self {
            queue: Queue::new(output, Dialect::WithoutVersion),
            opted_out: Arc::default(),
        }
    }

    /// Answers request `id` of method `M` with its result.
    pub(crate) async fn respond<M: ClientMethod>(&self, id: RequestId, result: &M::Response) {
        self.queue.respond(id, result).await;
    }

    /// Answers request `id` (or an unreadable one) with an error.
    pub(crate) async fn error(&self, id: Option<RequestId>, error: JsonRpcError) {
        self.queue.error(id, error).await;
    }

    /// Sends a notification, unless the client opted out of its method.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        let method = notification.method();
        if self
            .opted_out
            .get()
            .is_some_and(|methods| methods.contains(method))
        {
            return;
        }
        match notification.to_json() {
            Ok(line) => self.queue.send(line).await,
            Err(err) => tracing::error!(method, "cannot encode a notification: {err}"),
        }
    }

    /// Sends a request to the client; the receiver gets its answer (see [`Outgoing::resolve`]).
    pub(crate) async fn request(
        &self,
        request: ServerRequest,
    ) -> (RequestId, oneshot::Receiver<ClientReply>) {
        self.queue.request(|id, _| request.to_json(id)).await
    }

    /// Hands the client's answer to request `id` to whoever waits; false when nobody does
    /// (unknown id, or the question was withdrawn).
    pub(crate) fn resolve(&self, id: &RequestId, reply: ClientReply) -> bool {
        self.queue.resolve(id, reply)
    }

    /// Stops waiting for the answer to request `id`; a late answer is then ignored.
    pub(crate) fn withdraw(&self, id: &RequestId) {
        self.queue.withdraw(id);
    }

    /// Drops every later notification whose method is in `methods`.
    pub(crate) fn opt_out(&self, methods: Vec<String>) {
        let _ = self.opted_out.set(methods.into_iter().collect());
    }
}
