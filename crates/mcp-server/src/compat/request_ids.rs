//! Ids of the server's own requests (approvals) start at 1 on the wire.
//!
//! The TypeScript SDK ignores `notifications/cancelled` whose `requestId` is falsy,
//! so a request numbered 0 could never be withdrawn there. rmcp 3.9.0 numbers from
//! 0 and offers no way to change it: `serve_server` builds its own
//! `AtomicU32RequestIdProvider`, and `Peer::new` is private. So the transport
//! shifts the numbers: +1 on the server's requests and its cancellations of them,
//! -1 on the client's replies. rmcp keeps its own numbering inside.

use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, NumberOrString, RequestId, ServerJsonRpcMessage,
    ServerNotification,
};

/// Renumbers the server's requests, and its cancellations of them, for the wire.
pub(crate) fn outgoing(mut message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    match &mut message {
        JsonRpcMessage::Request(request) => request.id = on_wire(&request.id),
        JsonRpcMessage::Notification(notification) => {
            if let ServerNotification::CancelledNotification(cancelled) =
                &mut notification.notification
                && let Some(id) = &mut cancelled.params.request_id
            {
                *id = on_wire(id);
            }
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
    }
    message
}

/// Renumbers the client's replies back to rmcp's numbering; `None` for a reply to
/// a request the server never sent (id 0 or below).
pub(crate) fn incoming(mut message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
    let id = match &mut message {
        JsonRpcMessage::Response(response) => &mut response.id,
        JsonRpcMessage::Error(error) => match &mut error.id {
            Some(id) => id,
            None => return Some(message),
        },
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => return Some(message),
    };
    match from_wire(id) {
        Some(internal) => *id = internal,
        None => {
            tracing::warn!("dropping a reply to request {id}, which the server never sent");
            return None;
        }
    }
    Some(message)
}

fn on_wire(id: &RequestId) -> RequestId {
    match id {
        NumberOrString::Number(n) => NumberOrString::Number(n.saturating_add(1)),
        other => other.clone(),
    }
}

fn from_wire(id: &RequestId) -> Option<RequestId> {
    // rmcp also matches a reply whose id is the number written as a string.
    let number = match id {
        NumberOrString::Number(n) => *n,
        NumberOrString::String(text) => match text.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return Some(id.clone()),
        },
    };
    (number >= 1).then(|| NumberOrString::Number(number - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn out(value: Value) -> Value {
        let message: ServerJsonRpcMessage = serde_json::from_value(value).unwrap();
        serde_json::to_value(outgoing(message)).unwrap()
    }

    fn back(value: Value) -> Option<Value> {
        let message: ClientJsonRpcMessage = serde_json::from_value(value).unwrap();
        incoming(message).map(|m| serde_json::to_value(m).unwrap())
    }

    #[test]
    fn requests_and_their_cancellations_go_out_one_higher() {
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}});
        assert_eq!(out(request)["id"], 1);
        let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}});
        assert_eq!(out(cancelled)["params"]["requestId"], 1);
        // Answers to the client's own requests keep the client's ids.
        let response = json!({"jsonrpc": "2.0", "id": 0, "result": {}});
        assert_eq!(out(response)["id"], 0);
    }

    #[test]
    fn replies_come_back_one_lower_and_a_reply_to_zero_is_dropped() {
        let reply = json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "decline"}});
        assert_eq!(back(reply).unwrap()["id"], 0);
        let error = json!({"jsonrpc": "2.0", "id": "4", "error": {"code": -1, "message": "no"}});
        assert_eq!(back(error).unwrap()["id"], 3);
        assert_eq!(back(json!({"jsonrpc": "2.0", "id": 0, "result": {}})), None);
        // The client's requests keep their ids.
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
        assert_eq!(back(request).unwrap()["id"], 0);
    }
}
