//! rmcp over a message transport (stdio lines, or a WebSocket): a relay that reads the
//! client's frames and sorts them (`compat::frames`) before rmcp sees them, and rmcp's
//! end, which writes its messages into the transport's bounded output queue.
//!
//! rmcp never waits for its own sends — each one is a task of its own — so its loop
//! would keep taking input however far behind the output is. Sends here wait for a
//! place in the output queue before serializing, and the relay waits for room in the
//! same queue before reading the next frame, which carries the backpressure back to
//! the input: a client that floods requests without reading answers cannot grow the
//! server.

use std::io;

use deputy_jsonrpc::OutputQueue;
use deputy_jsonrpc::transport::{FrameReader, MessageTransport};
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage, ServerNotification};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::compat::Compat;
use crate::compat::frames::{Inbound, sort};

/// How many messages may wait for rmcp to take them.
const INBOUND_QUEUE_MESSAGES: usize = 4;

/// The rmcp side of the relay, plus a token cancelled when the input ends.
pub(crate) struct Framed {
    /// What rmcp serves on.
    pub(crate) transport: FramedTransport,
    /// Cancelled once the client closed its end of the input (or the output failed).
    pub(crate) input_closed: CancellationToken,
    /// Finishes when everything queued for output has been written out.
    pub(crate) output_done: tokio::task::JoinHandle<()>,
}

/// Starts the relay over `transport`, whose messages may be `limit` bytes long.
pub(crate) fn start(transport: MessageTransport, limit: usize) -> Framed {
    let MessageTransport {
        input,
        output,
        writer,
    } = transport;
    let (to_server, from_client) = mpsc::channel(INBOUND_QUEUE_MESSAGES);
    let input_closed = CancellationToken::new();
    tokio::spawn(relay_input(
        input,
        limit,
        to_server,
        output.clone(),
        input_closed.clone(),
    ));
    Framed {
        transport: FramedTransport {
            inbound: from_client,
            output,
        },
        input_closed,
        output_done: writer,
    }
}

/// Reads the client's frames until the input ends, forwarding what rmcp should see.
async fn relay_input(
    mut input: FrameReader,
    limit: usize,
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    output: OutputQueue,
    closed: CancellationToken,
) {
    // Waiting for room before each frame is the backpressure: while the output is
    // backed up, the input is left unread and the client's writes block.
    while output.wait_for_room().await.is_ok() {
        let frame = match input.next().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(err) => {
                tracing::warn!("reading the client's messages failed: {err}");
                break;
            }
        };
        let delivered = match sort(&frame, limit) {
            Inbound::Message(message) => to_server.send(*message).await.is_ok(),
            Inbound::Answer(answer) => output.send(answer).await.is_ok(),
            Inbound::Ignore => true,
        };
        if !delivered {
            break;
        }
    }
    // Cancelled before rmcp sees the end of input, so that whoever learns of the
    // end from rmcp also finds the token cancelled.
    closed.cancel();
    drop(to_server);
}

/// The transport rmcp serves on: typed messages in from the relay, messages out
/// through the bounded output queue.
pub(crate) struct FramedTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    output: OutputQueue,
}

impl FramedTransport {
    /// This transport behind the MCP compatibility adapter, which may answer into its
    /// output queue directly.
    pub(crate) fn into_compat(self) -> Compat<Self> {
        let output = self.output.clone();
        Compat::with_output(self, output)
    }
}

impl Transport<RoleServer> for FramedTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        message: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = self.output.clone();
        async move {
            let closed = |_| io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed");
            let place = output.reserve().await.map_err(closed)?;
            let text = wire_text(&message)?;
            place.send(text).await.map_err(closed)
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.inbound.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}

/// The wire text of `message`. A custom notification (every `codex/event`) whose `_meta`
/// is in its params already is written from its parts: rmcp's own serialization first
/// copies the params into a new JSON value to merge `_meta` in, and the event that ends a
/// command carries its captured output, megabytes of it.
fn wire_text(message: &ServerJsonRpcMessage) -> serde_json::Result<String> {
    #[derive(serde::Serialize)]
    struct Notification<'a> {
        jsonrpc: &'static str,
        method: &'a str,
        // As rmcp writes it: `null` when there are none.
        params: Option<&'a serde_json::Value>,
    }
    if let JsonRpcMessage::Notification(notification) = message
        && let ServerNotification::CustomNotification(custom) = &notification.notification
        && custom.extensions.is_empty()
    {
        return serde_json::to_string(&Notification {
            jsonrpc: "2.0",
            method: &custom.method,
            params: custom.params.as_ref(),
        });
    }
    serde_json::to_string(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The relay over a pipe, wrapped as the server uses it.
    fn relay(
        input: tokio::io::DuplexStream,
        output: tokio::io::DuplexStream,
    ) -> (
        Compat<FramedTransport>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let transport = MessageTransport::lines(input, output, crate::LIMITS);
        let framed = start(transport, crate::LIMITS.max_message_bytes);
        (
            framed.transport.into_compat(),
            framed.input_closed,
            framed.output_done,
        )
    }

    /// Everything the relay wrote, as JSON values.
    async fn written(mut client_out: tokio::io::DuplexStream) -> Vec<Value> {
        let mut text = String::new();
        client_out.read_to_string(&mut text).await.unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or(Value::Null))
            .collect()
    }

    fn initialize(id: i64) -> String {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }});
        format!("{message}\n")
    }

    #[test]
    fn a_custom_notification_is_written_as_rmcp_writes_it() {
        use rmcp::model::{CustomNotification, MetaObject, NotificationMetaObject};
        let event = json!({"_meta": {"threadId": "t"}, "id": "1",
            "msg": {"type": "exec_command_end", "stdout": "a \"quoted\"\nline é"}});
        let mut with_meta = CustomNotification::new("codex/event", Some(event.clone()));
        let mut meta = serde_json::Map::new();
        meta.insert("progressToken".into(), json!(3));
        with_meta
            .extensions
            .insert(NotificationMetaObject(MetaObject(meta)));
        for custom in [
            CustomNotification::new("codex/event", Some(event)),
            CustomNotification::new("notifications/x", None),
            with_meta,
        ] {
            let message =
                ServerJsonRpcMessage::notification(ServerNotification::CustomNotification(custom));
            let ours: Value = serde_json::from_str(&wire_text(&message).unwrap()).unwrap();
            let rmcps: Value = serde_json::to_value(&message).unwrap();
            assert_eq!(ours, rmcps);
        }
    }

    #[tokio::test]
    async fn bad_lines_are_answered_and_good_ones_reach_rmcp_in_order() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, client_out) = tokio::io::duplex(64 * 1024);
        let (mut transport, input_closed, output_done) = relay(input, output);
        let mut feed = initialize(1).into_bytes();
        feed.extend_from_slice(
            b"\xff\xfe\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
        );
        client.write_all(&feed).await.unwrap();
        drop(client);

        let mut methods = Vec::new();
        while let Some(message) = transport.receive().await {
            methods.push(serde_json::to_value(message).unwrap()["method"].clone());
        }
        assert_eq!(methods, [json!("initialize"), json!("ping")]);
        input_closed.cancelled().await;
        drop(transport);
        output_done.await.unwrap();
        let answers = written(client_out).await;
        let codes: Vec<&Value> = answers.iter().map(|a| &a["error"]["code"]).collect();
        assert_eq!(codes, [&json!(-32700), &json!(-32700)], "{answers:?}");
    }

    /// What the relay forwards to rmcp and writes back, for `feed` ending in EOF.
    async fn relay_all(feed: String) -> (Vec<Value>, Vec<Value>) {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, client_out) = tokio::io::duplex(64 * 1024);
        let (mut transport, _input_closed, output_done) = relay(input, output);
        client.write_all(feed.as_bytes()).await.unwrap();
        drop(client);
        let mut forwarded = Vec::new();
        while let Some(message) = transport.receive().await {
            forwarded.push(serde_json::to_value(message).unwrap());
        }
        drop(transport);
        output_done.await.unwrap();
        (forwarded, written(client_out).await)
    }

    #[tokio::test]
    async fn replies_to_the_servers_requests_reach_rmcp_renumbered() {
        let mut feed = initialize(1);
        feed.push_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        let (forwarded, _) = relay_all(feed).await;
        assert_eq!(forwarded.len(), 2, "{forwarded:?}");
        assert_eq!(forwarded[1]["id"], 0, "the reply to wire id 1 is rmcp's 0");
    }

    #[tokio::test]
    async fn a_plain_tools_list_is_answered_without_rmcp() {
        let meta = json!({"progressToken": 9});
        let mut feed = initialize(1);
        for request in [
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": "three", "method": "tools/list", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        ] {
            feed.push_str(&format!("{request}\n"));
        }
        let (forwarded, answers) = relay_all(feed).await;
        let ids: Vec<&Value> = forwarded.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!(4), &json!(5)], "{forwarded:?}");
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(ids, [&json!(2), &json!("three")], "{answers:?}");
        for answer in &answers {
            let tools = answer["result"]["tools"].as_array().expect("a tool list");
            assert_eq!(tools[0]["name"], "codex", "{answer}");
        }
    }

    #[tokio::test]
    async fn requests_out_of_lifecycle_order_are_refused_under_their_id() {
        let mut feed =
            String::from("{\"jsonrpc\":\"2.0\",\"id\":\"early\",\"method\":\"tools/list\"}\n");
        feed.push_str(&initialize(1));
        feed.push_str(&initialize(2));
        let (forwarded, answers) = relay_all(feed).await;
        assert_eq!(forwarded.len(), 1, "{forwarded:?}");
        assert_eq!(forwarded[0]["method"], "initialize");
        assert_eq!(answers[0]["id"], "early");
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert_eq!(answers[1]["id"], 2);
        assert_eq!(
            answers[1]["error"]["message"],
            "initialize called more than once"
        );
    }
}
