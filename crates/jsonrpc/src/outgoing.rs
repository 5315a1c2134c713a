//! Everything a server sends on one connection goes through an [`Outgoing`]: answers,
//! notifications and its own requests, whose replies it pairs with them by id.
//!
//! Ids of the server's requests are numbered from 0 on each connection; a reply
//! nobody waits for any more (the question was withdrawn) is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::message::{
    Dialect, JsonRpcError, OutgoingCall, OutgoingError, OutgoingResponse, RequestId,
};
use crate::output::OutputQueue;

/// The peer's reply to one of the server's requests: its `result`, or its error.
pub type Reply = Result<Value, JsonRpcError>;

/// A handle on one connection's output; cheap to clone.
#[derive(Debug, Clone)]
pub struct Outgoing {
    queue: OutputQueue,
    dialect: Dialect,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    next_request_id: AtomicI64,
    /// Requests waiting for the peer's reply, by id.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Reply>>>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Outgoing {
    /// Sends through `queue`, writing envelopes in `dialect`.
    pub fn new(queue: OutputQueue, dialect: Dialect) -> Self {
        Self {
            queue,
            dialect,
            shared: Arc::default(),
        }
    }

    /// Answers request `id` with `result`; a result that cannot be encoded is answered
    /// with -32603 instead.
    pub async fn respond(&self, id: RequestId, result: &impl Serialize) {
        let envelope = OutgoingResponse {
            jsonrpc: self.dialect.version(),
            id: &id,
            result,
        };
        match serde_json::to_string(&envelope) {
            Ok(text) => self.send(text).await,
            Err(err) => {
                let error = JsonRpcError::internal(format!("cannot encode the result: {err}"));
                self.error(Some(id), error).await;
            }
        }
    }

    /// Answers request `id` (or an unreadable one, `None`) with an error.
    pub async fn error(&self, id: Option<RequestId>, error: JsonRpcError) {
        let envelope = OutgoingError {
            jsonrpc: self.dialect.version(),
            id: id.as_ref(),
            error: &error,
        };
        match serde_json::to_string(&envelope) {
            Ok(text) => self.send(text).await,
            Err(err) => tracing::error!("cannot encode an error: {err}"),
        }
    }

    /// Sends the notification `method` with `params`.
    pub async fn notify(&self, method: &str, params: &impl Serialize) {
        let envelope = OutgoingCall {
            jsonrpc: self.dialect.version(),
            id: None,
            method,
            params,
        };
        match serde_json::to_string(&envelope) {
            Ok(text) => self.send(text).await,
            Err(err) => tracing::error!(method, "cannot encode a notification: {err}"),
        }
    }

    /// Sends a request built by `encode` for the id it is given; the receiver gets the
    /// peer's reply (see [`Outgoing::resolve`]), or an error if it could not be encoded.
    pub async fn request(
        &self,
        encode: impl FnOnce(&RequestId, Dialect) -> serde_json::Result<String>,
    ) -> (RequestId, oneshot::Receiver<Reply>) {
        let id = RequestId::Integer(self.shared.next_request_id.fetch_add(1, Ordering::Relaxed));
        let (reply_tx, reply_rx) = oneshot::channel();
        match encode(&id, self.dialect) {
            Ok(text) => {
                // Registered first: the reply may come back before `send` returns.
                self.shared.pending().insert(id.clone(), reply_tx);
                self.send(text).await;
            }
            Err(err) => {
                let _ = reply_tx.send(Err(JsonRpcError::internal(format!(
                    "cannot encode the request: {err}"
                ))));
            }
        }
        (id, reply_rx)
    }

    /// Hands the peer's reply to request `id` to whoever waits; false when nobody does
    /// (unknown id, or the request was withdrawn).
    pub fn resolve(&self, id: &RequestId, reply: Reply) -> bool {
        let waiting = self.shared.pending().remove(id);
        waiting.is_some_and(|tx| tx.send(reply).is_ok())
    }

    /// Stops waiting for the reply to request `id`; a late reply is then dropped.
    pub fn withdraw(&self, id: &RequestId) {
        self.shared.pending().remove(id);
    }

    /// The dialect envelopes are written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Queues one message as it is (JSON, no newline), waiting while the queue is full.
    /// Fails silently once the writer has stopped: there is nobody left to tell.
    pub async fn send(&self, text: String) {
        let _ = self.queue.send(text).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::QueueBounds;

    #[tokio::test]
    async fn replies_find_their_request_and_envelopes_follow_the_dialect() {
        let (queue, mut written) = OutputQueue::new(QueueBounds {
            messages: 8,
            bytes: 1 << 20,
        });
        let outgoing = Outgoing::new(queue, Dialect::WithoutVersion);
        let (id, reply) = outgoing
            .request(|id, dialect| {
                serde_json::to_string(&OutgoingCall {
                    jsonrpc: dialect.version(),
                    id: Some(id),
                    method: "ask",
                    params: &serde_json::json!({}),
                })
            })
            .await;
        assert_eq!(
            written.recv().await.unwrap().text,
            r#"{"id":0,"method":"ask","params":{}}"#
        );
        assert!(outgoing.resolve(&id, Ok(serde_json::json!({"ok": true}))));
        assert_eq!(reply.await.unwrap(), Ok(serde_json::json!({"ok": true})));
        assert!(!outgoing.resolve(&id, Ok(Value::Null)), "answered twice");

        let versioned = Outgoing::new(outgoing.queue.clone(), Dialect::JsonRpc2);
        versioned.respond(RequestId::String("a".into()), &1).await;
        assert_eq!(
            written.recv().await.unwrap().text,
            r#"{"jsonrpc":"2.0","id":"a","result":1}"#
        );
        versioned
            .error(None, JsonRpcError::invalid_request("no"))
            .await;
        assert_eq!(
            written.recv().await.unwrap().text,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#
        );
    }
}
